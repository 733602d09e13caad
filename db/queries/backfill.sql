-- former_attempts_table --
-- Say whether the former model's attempts table exists
SELECT to_regclass('attempts') IS NOT NULL

-- index_former_attempts --
-- Index the former attempts by webhook so each batch is found without a full scan
CREATE INDEX IF NOT EXISTS attempts_backfill_by_webhook ON attempts ((webhook_id::text))

-- count_former_webhooks --
-- Count the former webhooks left after the cursor
SELECT count(DISTINCT webhook_id::text) FROM attempts WHERE webhook_id::text > %(after)s

-- read_backfill_progress --
-- Return where the backfill stopped, creating its progress row on first use
INSERT INTO backfill_progress (name) VALUES ('attempts')
ON CONFLICT (name) DO UPDATE SET name = excluded.name
RETURNING last_key, counts, completed_at

-- save_backfill_progress --
-- Record the last webhook converted and the running counts
UPDATE backfill_progress
SET last_key = %(last_key)s, counts = %(counts)s, updated_at = now(),
    completed_at = CASE WHEN %(done)s THEN now() END
WHERE name = 'attempts'

-- former_attempts_batch --
-- Return every former attempt of the next webhooks after the cursor, oldest first per webhook and config
WITH webhooks AS (
    SELECT DISTINCT webhook_id::text AS webhook_id
    FROM attempts
    WHERE webhook_id::text > %(after)s
    ORDER BY 1
    LIMIT %(limit)s
)
SELECT a.webhook_id::text AS webhook_id, a.config ->> 'id' AS config_id,
       a.config ->> 'endpoint' AS endpoint, a.created_at, a.updated_at, a.payload, a.status_code,
       a.retry_attempt, a.status::text AS status, a.next_retry_after
FROM attempts a
JOIN webhooks w ON w.webhook_id = a.webhook_id::text
ORDER BY a.webhook_id::text, a.config ->> 'id', a.created_at, a.id

-- active_configs_among --
-- Return which of the given config ids exist and whether each is active
SELECT id, active FROM configs WHERE id = ANY(%(ids)s::text[])

-- insert_backfilled_events --
-- Store the events of converted webhooks (payload once per event), as the default tenant's: the former model had no tenants
INSERT INTO events (id, tenant_id, type, payload, occurred_at, source)
SELECT id, default_tenant_id(), type, payload::json, occurred_at, 'backfill'
FROM unnest(%(ids)s::text[], %(types)s::text[], %(payloads)s::text[],
            %(occurred_at)s::timestamptz[]) AS e (id, type, payload, occurred_at)
ON CONFLICT (tenant_id, id) DO NOTHING

-- insert_backfilled_deliveries --
-- Store converted deliveries in their state (an existing (event, config) pair is left alone); wake the dispatchers when a pending one was stored; return the new ones
WITH inserted AS (
    INSERT INTO deliveries (event_id, tenant_id, config_id, event_type, status, attempt_count,
                            next_attempt_at, last_status_code, last_error, created_at,
                            updated_at)
    SELECT d.event_id, default_tenant_id(), d.config_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at,
           d.last_status_code, d.last_error, d.created_at, d.updated_at
    FROM unnest(%(event_ids)s::text[], %(config_ids)s::text[], %(types)s::text[],
                %(statuses)s::text[], %(attempt_counts)s::integer[],
                %(next_attempts)s::timestamptz[], %(codes)s::integer[], %(errors)s::text[],
                %(created)s::timestamptz[], %(updated)s::timestamptz[])
        AS d (event_id, config_id, event_type, status, attempt_count, next_attempt_at,
              last_status_code, last_error, created_at, updated_at)
    ON CONFLICT (event_id, config_id) DO NOTHING
    RETURNING id, event_id, config_id, status
),
wake AS (
    SELECT notify_deliveries_due()
    FROM (SELECT 1 FROM inserted WHERE status = 'pending' LIMIT 1) p
)
SELECT id, event_id, config_id, (SELECT count(*) FROM wake) AS woken FROM inserted

-- insert_backfilled_attempts --
-- Store the attempt history of newly converted deliveries
INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation, endpoint,
                               outcome, status_code, duration_ms, created_at, tenant_id)
SELECT *, default_tenant_id() FROM unnest(%(delivery_ids)s::bigint[], %(numbers)s::integer[],
                     %(generations)s::integer[], %(endpoints)s::text[], %(outcomes)s::text[],
                     %(codes)s::integer[], %(durations)s::integer[],
                     %(created)s::timestamptz[])
