-- ingest_events --
-- Store new events and, in the same statement, one pending delivery per active config of the event's tenant subscribed to its type (exactly, or by a pattern: `prefix.*`, `*`); repeated event ids of a tenant create nothing; wake idle dispatchers
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
new_deliveries AS (
    INSERT INTO deliveries (event_id, tenant_id, config_id, event_type, next_attempt_at,
                            ordering_key)
    SELECT e.id, e.tenant_id, c.id, e.type, now(), e.ordering_key
    FROM new_events e
    JOIN input i ON i.id = e.id AND i.tenant_id = e.tenant_id
    JOIN subscribed c ON c.tenant_id = e.tenant_id
                     AND c.event_types && subscription_patterns(e.type)
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
       (SELECT count(*) FROM wake) AS woken

-- deliveries_of_event --
-- Return the ids of an event's deliveries, oldest first
SELECT id FROM deliveries
WHERE tenant_id = %(tenant_id)s AND event_id = %(event_id)s
ORDER BY id

-- event_created_now --
-- Say whether the current transaction stored the event (or found it stored before)
SELECT xmin = pg_current_xact_id()::xid FROM events
WHERE tenant_id = %(tenant_id)s AND id = %(event_id)s
