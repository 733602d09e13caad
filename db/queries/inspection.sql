-- list_deliveries --
-- Page through deliveries newest first (by id), before an id cursor, with optional filters; psycopg2 inlines the values, so the planner drops the unused filters and picks the matching index
SELECT id, event_id, event_type, config_id, status, attempt_count, replay_generation,
       next_attempt_at, last_status_code, last_error, created_at, updated_at
FROM deliveries
WHERE (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
  AND (%(config_id)s::text IS NULL OR config_id = %(config_id)s::text)
  AND (%(statuses)s::text[] IS NULL OR status = ANY (%(statuses)s::text[]))
  AND (%(event_type)s::text IS NULL OR event_type = %(event_type)s::text)
  AND (%(event_id)s::text IS NULL OR event_id = %(event_id)s::text)
  AND (%(created_after)s::timestamptz IS NULL OR created_at >= %(created_after)s::timestamptz)
  AND (%(created_before)s::timestamptz IS NULL OR created_at < %(created_before)s::timestamptz)
ORDER BY id DESC
LIMIT %(limit)s

-- get_delivery --
-- Return one delivery with its event's payload (as JSON text) and time
SELECT d.id, d.event_id, d.event_type, d.config_id, d.status, d.attempt_count,
       d.replay_generation, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at,
       d.updated_at, e.payload::text AS payload, e.occurred_at
FROM deliveries d
JOIN events e ON e.id = d.event_id
WHERE d.id = %(id)s

-- attempts_of_delivery --
-- Return the attempts of one delivery, oldest first
SELECT id, attempt_number, replay_generation, endpoint, outcome, status_code, duration_ms,
       response_excerpt, error, created_at
FROM delivery_attempts
WHERE delivery_id = %(id)s
ORDER BY id

-- count_deliveries_by_status --
-- Count the deliveries of each status (pending, delivering, succeeded, failed, cancelled), each count stopping at the cap; literal statuses let each count use its own index
SELECT (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT %(cap)s) s),
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'delivering' LIMIT %(cap)s) s),
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'succeeded' LIMIT %(cap)s) s),
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'failed' LIMIT %(cap)s) s),
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'cancelled' LIMIT %(cap)s) s)

-- oldest_due_age --
-- Return the seconds since the oldest due pending delivery became due, null when none is due
SELECT extract(epoch FROM now() - min(next_attempt_at))::float8
FROM deliveries
WHERE status = 'pending' AND next_attempt_at <= now()
