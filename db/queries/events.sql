-- ingest_events --
-- Store new events and, in the same statement, one pending delivery per active config of the event's tenant subscribed to its exact type; repeated event ids of a tenant create nothing; wake idle dispatchers
WITH input AS (
    -- An id repeated within the batch (for one tenant) keeps its first occurrence, as a
    -- later batch would.
    SELECT DISTINCT ON (tenant_id, id) id, tenant_id, type, payload, occurred_at, message_key,
           ordering_key, trace_parent, trace_state, position
    FROM unnest(%(ids)s::text[], %(tenant_ids)s::bigint[], %(types)s::text[],
                %(payloads)s::text[], %(occurred_at)s::timestamptz[], %(keys)s::bytea[],
                %(ordering_keys)s::text[], %(trace_parents)s::text[],
                %(trace_states)s::text[]) WITH ORDINALITY
        AS i (id, tenant_id, type, payload, occurred_at, message_key, ordering_key,
              trace_parent, trace_state, position)
    ORDER BY tenant_id, id, position
),
new_events AS (
    INSERT INTO events (id, tenant_id, type, payload, occurred_at, source, message_key,
                        ordering_key, trace_parent, trace_state)
    SELECT id, tenant_id, type, payload::json, coalesce(occurred_at, now()), %(source)s,
           message_key, ordering_key, trace_parent, trace_state
    FROM input
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING id, tenant_id, type, ordering_key
),
subscribed AS (
    -- Share-locked, so a concurrent deactivation either waits for this insert (and then
    -- cancels its deliveries) or commits first (and then this statement skips the config).
    SELECT id, tenant_id, event_types
    FROM configs
    WHERE active AND deleted_at IS NULL
      -- The batch's tenants and types as given (constants, not subqueries): the planner sees
      -- them and finds the subscribers through the subscriptions index, among the batch's
      -- tenants' configs only.
      AND tenant_id = ANY (%(batch_tenants)s::bigint[])
      AND event_types && %(types)s::text[]
    FOR SHARE
),
new_deliveries AS (
    INSERT INTO deliveries (event_id, tenant_id, config_id, event_type, next_attempt_at,
                            ordering_key)
    SELECT e.id, e.tenant_id, c.id, e.type, now(), e.ordering_key
    FROM new_events e
    JOIN input i ON i.id = e.id AND i.tenant_id = e.tenant_id
    JOIN subscribed c ON c.tenant_id = e.tenant_id AND c.event_types @> ARRAY[e.type]
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
