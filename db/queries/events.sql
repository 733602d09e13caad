-- ingest_events --
-- Store new events and, in the same statement, one pending delivery per active config of the event's tenant subscribed to its type (exactly, or by a pattern: `prefix.*`, `*`) unless the config's filter rejected the event (the given pairs of event position and config, counted for each config); repeated event ids of a tenant create nothing; wake idle dispatchers
WITH input AS (
    -- An id repeated within the batch (for one tenant) keeps its first occurrence, as a
    -- later batch would.
    SELECT DISTINCT ON (tenant_id, id) id, tenant_id, type, payload, occurred_at, message_key,
           ordering_key, trace_parent, trace_state, schema_version, position
    FROM unnest(%(ids)s::text[], %(tenant_ids)s::bigint[], %(types)s::text[],
                %(payloads)s::text[], %(occurred_at)s::timestamptz[], %(keys)s::bytea[],
                %(ordering_keys)s::text[], %(trace_parents)s::text[],
                %(trace_states)s::text[], %(schema_versions)s::integer[]) WITH ORDINALITY
        AS i (id, tenant_id, type, payload, occurred_at, message_key, ordering_key,
              trace_parent, trace_state, schema_version, position)
    ORDER BY tenant_id, id, position
),
new_events AS (
    INSERT INTO events (id, tenant_id, type, payload, occurred_at, source, message_key,
                        ordering_key, trace_parent, trace_state, schema_version)
    SELECT id, tenant_id, type, payload::json, coalesce(occurred_at, now()), %(source)s,
           message_key, ordering_key, trace_parent, trace_state, schema_version
    FROM input
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING id, tenant_id, type, ordering_key
),
subscribed AS MATERIALIZED (
    -- Share-locked, so a concurrent deactivation either waits for this insert (and then
    -- cancels its deliveries) or commits first (and then this statement skips the config);
    -- among the batch's tenants' configs only, found through the subscriptions index by the
    -- subscriptions the batch's types match (subscribers(), migration 0030).
    SELECT s.id, s.tenant_id, s.event_types
    FROM subscribers(%(batch_tenants)s::bigint[], %(patterns)s::text[]) s
),
filtered_out AS MATERIALIZED (
    -- The pairs of a new event (by its position in the batch) and a config whose filter
    -- rejected it (decided by the service over filtered_subscribers(), migration 0032).
    SELECT f.config_id, i.tenant_id
    FROM unnest(%(filtered_positions)s::bigint[], %(filtered_configs)s::text[])
        AS f (position, config_id)
    JOIN input i ON i.position = f.position
    JOIN new_events e ON e.id = i.id AND e.tenant_id = i.tenant_id
),
counted AS (
    -- In config id order, as every ingest takes these rows: after the configs, before the
    -- deliveries' health rows (docs/architecture.md, the lock order).
    INSERT INTO config_filter_counts AS n (config_id, slot, tenant_id, filtered_out,
                                           last_filtered_out_at)
    SELECT config_id, mod(pg_backend_pid(), 8), tenant_id, count(*), now()
    FROM filtered_out
    GROUP BY config_id, tenant_id
    ORDER BY config_id
    ON CONFLICT (config_id, slot) DO UPDATE
    SET filtered_out = n.filtered_out + excluded.filtered_out,
        last_filtered_out_at = excluded.last_filtered_out_at
),
new_deliveries AS (
    INSERT INTO deliveries (event_id, tenant_id, config_id, event_type, next_attempt_at,
                            ordering_key)
    SELECT e.id, e.tenant_id, c.id, e.type, now(), e.ordering_key
    FROM new_events e
    JOIN input i ON i.id = e.id AND i.tenant_id = e.tenant_id
    JOIN subscribed c ON c.tenant_id = e.tenant_id
                     AND c.event_types && subscription_patterns(e.type)
    WHERE NOT EXISTS (
        SELECT 1 FROM unnest(%(filtered_positions)s::bigint[], %(filtered_configs)s::text[])
            AS f (position, config_id)
        WHERE f.position = i.position AND f.config_id = c.id)
    -- In the batch's order (a partition's offsets): an ordered config numbers its keys'
    -- deliveries in the order they are inserted.
    ORDER BY i.position, c.id
    ON CONFLICT (event_id, config_id) DO NOTHING
    RETURNING id
),
wake AS (
    SELECT notify_deliveries_due() FROM (SELECT 1 FROM new_deliveries LIMIT 1) d
)
SELECT (SELECT count(*) FROM new_events) AS events_created,
       (SELECT count(*) FROM new_deliveries) AS deliveries_created,
       (SELECT count(*) FROM filtered_out) AS filtered_out,
       (SELECT count(*) FROM wake) AS woken

-- filtered_subscribers --
-- Return the active configs with a filter of the given tenants subscribed to any of the given patterns, with the filter's text, share-locked (the ingest that follows in the transaction sees these filters)
SELECT id, tenant_id, event_types, filter
FROM filtered_subscribers(%(tenant_ids)s::bigint[], %(patterns)s::text[])

-- deliveries_of_event --
-- Return the ids of an event's deliveries, oldest first
SELECT id FROM deliveries
WHERE tenant_id = %(tenant_id)s AND event_id = %(event_id)s
ORDER BY id

-- event_created_now --
-- Say whether the current transaction stored the event (or found it stored before)
SELECT xmin = pg_current_xact_id()::xid FROM events
WHERE tenant_id = %(tenant_id)s AND id = %(event_id)s

-- take_publish_slots --
-- Take a slot of its tenant's publish rate for each given event not stored before, in the order given, as many as each rate-limited tenant's schedule allows now (those tenants locked in id order); return the index of each given event that must wait, with its tenant's uid and the seconds until its tenant's next events (a burst at most) fit
WITH given AS (
    SELECT g.tenant_id, g.id, g.position
    FROM unnest(%(tenant_ids)s::bigint[], %(ids)s::text[]) WITH ORDINALITY
        AS g (tenant_id, id, position)
),
limited AS MATERIALIZED (
    -- Locked in id order, the tenants' rows before anything else the publish locks: a
    -- concurrent publish of the same tenant waits here, then reads the schedule this one left.
    SELECT t.id, t.uid, t.events_per_second, t.publish_schedule
    FROM tenants t
    WHERE t.id = ANY (%(tenant_ids)s::bigint[]) AND t.events_per_second IS NOT NULL
    ORDER BY t.id
    FOR NO KEY UPDATE
),
fresh AS (
    -- Each tenant's events that this publish may store (an id given twice counts once, at
    -- its first place), numbered in the order given; an event stored before takes no slot.
    SELECT f.tenant_id, f.id, row_number() OVER (PARTITION BY f.tenant_id
                                                 ORDER BY f.position) AS turn
    FROM (SELECT g.tenant_id, g.id, min(g.position) AS position
          FROM given g
          JOIN limited l ON l.id = g.tenant_id
          WHERE NOT EXISTS (SELECT 1 FROM events e
                            WHERE e.tenant_id = g.tenant_id AND e.id = g.id)
          GROUP BY g.tenant_id, g.id) f
),
rule AS (
    -- In whole microseconds: the spacing of two events (rounded up, so never faster than the
    -- rate), the burst (one second's worth rounded down, at least one event), the span of a
    -- burst, and how far the schedule is ahead of now (at most a span: a raised rate applies
    -- within one).
    SELECT l.id, l.uid, r.spacing, r.burst, r.spacing * r.burst AS span,
           least(greatest(0, (extract(epoch FROM l.publish_schedule - now()) * 1e6)::bigint),
                 r.spacing * r.burst) AS ahead,
           (SELECT count(*) FROM fresh f WHERE f.tenant_id = l.id) AS wanted
    FROM limited l
    CROSS JOIN LATERAL (
        SELECT greatest(1, least(ceil(1e6 / l.events_per_second), 1e12))::bigint AS spacing,
               greatest(1, least(floor(l.events_per_second), 1e6))::bigint AS burst) r
),
slots AS (
    -- As many of its events as fit within the span from now.
    SELECT id, uid, spacing, burst, span, ahead, wanted,
           least(wanted, (span - ahead) / spacing) AS granted
    FROM rule
),
taken AS (
    UPDATE tenants t
    SET publish_schedule = now() + (s.ahead + s.granted * s.spacing) * interval '1 microsecond'
    FROM slots s
    WHERE t.id = s.id AND s.granted > 0
)
SELECT g.position - 1 AS index, s.uid,
       (s.ahead + (s.granted + least(s.wanted - s.granted, s.burst)) * s.spacing - s.span)
           / 1e6 AS wait_seconds
FROM fresh f
JOIN slots s ON s.id = f.tenant_id
JOIN given g ON g.tenant_id = f.tenant_id AND g.id = f.id
WHERE f.turn > s.granted
ORDER BY g.position
