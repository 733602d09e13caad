-- claim_due_deliveries --
-- Claim up to `limit` due pending deliveries, oldest due first, skipping rows other workers hold; return what the attempt needs, read from the config as it is now
WITH due AS (
    SELECT id
    FROM deliveries
    WHERE status = 'pending' AND next_attempt_at <= now()
    ORDER BY next_attempt_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE deliveries d
SET status = 'delivering',
    claimed_at = now(),
    claimed_by = %(owner)s,
    claim_token = %(token)s,
    generation_started_at = coalesce(d.generation_started_at, now()),
    updated_at = now()
FROM due, events e, configs c
WHERE d.id = due.id AND e.id = d.event_id AND c.id = d.config_id
RETURNING d.id, d.event_id, e.type, e.payload::text, e.occurred_at, d.config_id, c.active,
          c.endpoint, c.secret,
          ARRAY(SELECT previous.entry ->> 'secret'
                FROM jsonb_array_elements(c.previous_secrets) WITH ORDINALITY
                    AS previous (entry, position)
                WHERE (previous.entry ->> 'expires_at')::timestamptz > now()
                ORDER BY previous.position),
          d.attempt_count, d.replay_generation, d.generation_started_at, d.last_backoff_seconds,
          now()

-- record_attempts --
-- Append one attempt per result (once per claim: a result recorded again adds nothing) and move each delivery still claimed with the given token to its next state; a non-2xx result of an inactive config becomes cancelled; return the deliveries that changed
WITH results AS (
    SELECT *
    FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(attempt_numbers)s::integer[],
                %(generations)s::integer[], %(endpoints)s::text[], %(outcomes)s::text[],
                %(status_codes)s::integer[], %(durations_ms)s::integer[],
                %(excerpts)s::text[], %(errors)s::text[], %(next_statuses)s::text[],
                %(next_delays)s::float8[], %(last_errors)s::text[], %(next_backoffs)s::float8[])
        AS r (delivery_id, claim_token, attempt_number, replay_generation, endpoint, outcome,
              status_code, duration_ms, response_excerpt, error, next_status, next_delay,
              last_error, next_backoff)
),
attempts AS (
    INSERT INTO delivery_attempts (delivery_id, attempt_number, replay_generation, endpoint,
                                   outcome, status_code, duration_ms, response_excerpt, error,
                                   claim_token)
    SELECT r.delivery_id, r.attempt_number, r.replay_generation, r.endpoint, r.outcome,
           r.status_code, r.duration_ms, r.response_excerpt, r.error, r.claim_token
    FROM results r
    WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.id = r.delivery_id)
      AND NOT EXISTS (SELECT 1 FROM delivery_attempts a
                      WHERE a.delivery_id = r.delivery_id AND a.claim_token = r.claim_token)
),
configs_now AS (
    -- Share-locked: a concurrent deactivation waits, then cancels what this made pending.
    SELECT id, active
    FROM configs
    WHERE id IN (SELECT d.config_id FROM deliveries d JOIN results r ON r.delivery_id = d.id)
    ORDER BY id
    FOR SHARE
),
moved AS (
    UPDATE deliveries d
    SET status = CASE WHEN r.next_status = 'succeeded' OR c.active THEN r.next_status
                      ELSE 'cancelled' END,
        attempt_count = d.attempt_count + 1,
        next_attempt_at = CASE WHEN r.next_status = 'pending' AND c.active
                               THEN now() + make_interval(secs => r.next_delay) END,
        last_backoff_seconds = CASE WHEN r.next_status = 'pending' AND c.active
                                    THEN r.next_backoff END,
        last_status_code = r.status_code,
        last_error = r.last_error,
        claimed_at = NULL,
        claimed_by = NULL,
        claim_token = NULL,
        updated_at = now()
    FROM results r, configs_now c
    WHERE d.id = r.delivery_id AND c.id = d.config_id
      AND d.status = 'delivering' AND d.claim_token = r.claim_token
    RETURNING d.id, r.claim_token, d.status, d.next_attempt_at
),
wake AS (
    SELECT pg_notify('webhooks_deliveries_due', '')
    FROM (SELECT 1 FROM moved WHERE status = 'pending' AND next_attempt_at <= now() LIMIT 1) m
)
SELECT id, claim_token, status, next_attempt_at, (SELECT count(*) FROM wake) FROM moved

-- release_claims --
-- Hand claimed deliveries back without an attempt: pending and due now if their config is active, else cancelled
WITH claimed AS (
    SELECT d.id, d.config_id
    FROM deliveries d
    JOIN unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS r (id, claim_token)
      ON r.id = d.id AND r.claim_token = d.claim_token
    WHERE d.status = 'delivering'
    FOR UPDATE OF d
),
configs_now AS (
    SELECT id, active FROM configs WHERE id IN (SELECT config_id FROM claimed) ORDER BY id
    FOR SHARE
),
released AS (
    UPDATE deliveries d
    SET status = CASE WHEN c.active THEN 'pending' ELSE 'cancelled' END,
        next_attempt_at = CASE WHEN c.active THEN now() END,
        claimed_at = NULL, claimed_by = NULL, claim_token = NULL, updated_at = now()
    FROM claimed, configs_now c
    WHERE d.id = claimed.id AND c.id = claimed.config_id
    RETURNING d.id, d.status
),
wake AS (
    SELECT pg_notify('webhooks_deliveries_due', '')
    FROM (SELECT 1 FROM released WHERE status = 'pending' LIMIT 1) r
)
SELECT id, status, (SELECT count(*) FROM wake) FROM released

-- recover_stale_claims --
-- Return claims older than the timeout to pending (config active) or cancelled (inactive), in a bounded batch
WITH stale AS (
    SELECT id, config_id, claimed_by
    FROM deliveries
    WHERE status = 'delivering' AND claimed_at < now() - make_interval(secs => %(timeout)s)
    ORDER BY claimed_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
configs_now AS (
    SELECT id, active FROM configs WHERE id IN (SELECT config_id FROM stale) ORDER BY id
    FOR SHARE
),
recovered AS (
    UPDATE deliveries d
    SET status = CASE WHEN c.active THEN 'pending' ELSE 'cancelled' END,
        next_attempt_at = CASE WHEN c.active THEN now() END,
        last_error = 'claim by ' || coalesce(stale.claimed_by, 'unknown worker')
                     || ' went stale; returned to the queue',
        claimed_at = NULL, claimed_by = NULL, claim_token = NULL, updated_at = now()
    FROM stale, configs_now c
    WHERE d.id = stale.id AND c.id = stale.config_id
    RETURNING d.id, d.status
),
wake AS (
    SELECT pg_notify('webhooks_deliveries_due', '')
    FROM (SELECT 1 FROM recovered WHERE status = 'pending' LIMIT 1) r
)
SELECT id, status, (SELECT count(*) FROM wake) FROM recovered

-- seconds_until_next_due --
-- Return the seconds until the earliest pending delivery is due, 0 if one is due now, null if none is pending
SELECT greatest(0, extract(epoch FROM min(next_attempt_at) - now()))::float8
FROM deliveries
WHERE status = 'pending'

-- queue_depth --
-- Count pending deliveries, stopping at the cap so a huge backlog stays cheap to measure
SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT %(cap)s) p
