-- delivery_filter --
-- The conditions of a delivery filter (included by the statements below): whose deliveries the scope may see, and the filter's own; psycopg2 inlines the values, so the planner drops the unused conditions and picks the matching index
(%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)
AND (%(tenant)s::bigint IS NULL OR d.tenant_id = %(tenant)s::bigint)
AND (%(config_id)s::text IS NULL OR d.config_id = %(config_id)s::text)
AND (%(config_ids)s::text[] IS NULL OR d.config_id = ANY (%(config_ids)s::text[]))
AND (%(status)s::text IS NULL OR d.status = %(status)s::text)
AND (%(statuses)s::text[] IS NULL OR d.status = ANY (%(statuses)s::text[]))
AND (%(event_type)s::text IS NULL OR d.event_type = %(event_type)s::text)
AND (%(event_types)s::text[] IS NULL OR d.event_type = ANY (%(event_types)s::text[]))
AND (%(event_id)s::text IS NULL OR d.event_id = %(event_id)s::text)
AND (%(last_status_codes)s::int[] IS NULL
     OR d.last_status_code = ANY (%(last_status_codes)s::int[]))
AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
AND (%(ordering_key)s::text IS NULL OR d.ordering_key = %(ordering_key)s::text)
AND (%(webhook_id)s::text IS NULL OR d.webhook_id = %(webhook_id)s::text)
AND (NOT %(replayable_only)s
     OR (d.status IN ('failed', 'pending')
         AND NOT (d.status = 'pending' AND pending_is_held(d.config_id, d.next_attempt_at))
         AND d.config_id IN (SELECT id FROM configs WHERE active AND deleted_at IS NULL)))

-- delivery_summary --
-- A delivery as the listings show it, with its config's name and what holds it back, from the deliveries as `d` (included by the list statements below, before their filter)
SELECT d.id, coalesce(d.webhook_id, d.id::text) AS webhook_id, d.event_id, d.event_type,
       d.config_id, d.status, d.attempt_count, d.replay_generation, d.next_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.updated_at, d.ordering_key,
       d.tenant_id, (SELECT c.name FROM configs c WHERE c.id = d.config_id) AS config_name,
       hold.held_by, hold.held_since, hold.held_until, hold.held_reason, hold.held_behind
FROM deliveries d
LEFT JOIN LATERAL delivery_hold(d.status, d.config_id, d.next_attempt_at, d.ordering_key,
                                d.sequence) hold ON true

-- list_deliveries_newest --
-- Page through the deliveries a filter matches, newest first (by creation time, then id), below a (created_at, id) cursor, each with its config's name; each filter's (filter, created_at, id) index serves a first page, a deep page and an old window alike
/* include delivery_summary */
WHERE /* include delivery_filter */
  AND (%(cursor_id)s::bigint IS NULL
       OR (d.created_at, d.id) < (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY d.created_at DESC, d.id DESC
LIMIT %(limit)s

-- list_deliveries_oldest --
-- Page through the deliveries a filter matches, oldest first (by creation time, then id), above a (created_at, id) cursor (paging newest-first listings backwards)
/* include delivery_summary */
WHERE /* include delivery_filter */
  AND (%(cursor_id)s::bigint IS NULL
       OR (d.created_at, d.id) > (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY d.created_at, d.id
LIMIT %(limit)s

-- list_deliveries_due_soonest --
-- Page through the deliveries a filter matches that have a next attempt time, soonest first, after a (time, id) cursor
/* include delivery_summary */
WHERE /* include delivery_filter */
  AND d.next_attempt_at IS NOT NULL
  AND (%(cursor_id)s::bigint IS NULL
       OR (d.next_attempt_at, d.id) > (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY d.next_attempt_at, d.id
LIMIT %(limit)s

-- list_deliveries_due_latest --
-- Page through the deliveries a filter matches that have a next attempt time, latest first, before a (time, id) cursor (paging the soonest-first listing backwards)
/* include delivery_summary */
WHERE /* include delivery_filter */
  AND d.next_attempt_at IS NOT NULL
  AND (%(cursor_id)s::bigint IS NULL
       OR (d.next_attempt_at, d.id) < (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY d.next_attempt_at DESC, d.id DESC
LIMIT %(limit)s

-- count_deliveries --
-- Count the deliveries a filter matches, stopping one past the bound so the cost stays bounded
SELECT count(*)
FROM (SELECT 1 FROM deliveries d WHERE /* include delivery_filter */ LIMIT %(bound)s + 1) matched

-- estimate_deliveries --
-- Return the planner's estimate of the deliveries a filter matches (nothing is counted)
EXPLAIN (FORMAT JSON) SELECT 1 FROM deliveries d WHERE /* include delivery_filter */

-- get_delivery --
-- Return one delivery that the scope may see, with its event's payload (as JSON text), time, broker message key and trace context
SELECT d.id, coalesce(d.webhook_id, d.id::text) AS webhook_id, d.event_id, d.event_type,
       d.config_id, d.status, d.attempt_count, d.replay_generation, d.next_attempt_at,
       d.last_status_code, d.last_error, d.created_at, d.updated_at, d.ordering_key,
       c.name AS config_name,
       hold.held_by, hold.held_since, hold.held_until, hold.held_reason, hold.held_behind,
       e.payload::text AS payload, e.occurred_at, e.message_key, e.trace_parent, e.trace_state,
       d.tenant_id
FROM deliveries d
JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
JOIN configs c ON c.id = d.config_id
LEFT JOIN LATERAL delivery_hold(d.status, d.config_id, d.next_attempt_at, d.ordering_key,
                                d.sequence) hold ON true
WHERE d.id = %(id)s
  AND (%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)

-- attempts_of_delivery --
-- Return the newest `last` attempts of one delivery the scope may see, newest first, each with the request headers it sent: those it kept, and those its row and its delivery's hold (the webhook id, the attempt number and generation)
SELECT a.id, a.attempt_number, a.replay_generation, a.endpoint, a.outcome, a.status_code,
       a.duration_ms, a.response_excerpt, a.error, a.created_at,
       jsonb_build_object('webhook-id', d.webhook_id,
                          'webhook-attempt', a.attempt_number::text,
                          'webhook-replay-generation', a.replay_generation::text)
       || a.request_headers AS request_headers
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE a.delivery_id = %(id)s
  AND (%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)
ORDER BY a.id DESC
LIMIT %(last)s

-- count_deliveries_by_status --
-- Count the deliveries of each status (pending, delivering, succeeded, failed, cancelled), each count stopping at its own cap (0 skips it); literal statuses let each count use its own index
SELECT (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending'
                              LIMIT %(pending)s) s) AS pending,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'delivering'
                              LIMIT %(delivering)s) s) AS delivering,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'succeeded'
                              LIMIT %(succeeded)s) s) AS succeeded,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'failed'
                              LIMIT %(failed)s) s) AS failed,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'cancelled'
                              LIMIT %(cancelled)s) s) AS cancelled

-- estimate_deliveries_by_status --
-- Estimate the deliveries of each status from the planner's statistics, as the planner does: the rows per page of the last VACUUM or ANALYZE times the table's pages now, times each status's share of the last ANALYZE sample; statuses the sample did not see are absent
WITH size AS (
    SELECT CASE WHEN relpages > 0 AND reltuples > 0
                THEN reltuples / relpages
                     * (pg_relation_size(oid) / current_setting('block_size')::integer)
                ELSE 0 END AS rows
    FROM pg_class
    WHERE oid = 'deliveries'::regclass
),
shares AS (
    SELECT unnest(most_common_vals::text::text[]) AS status,
           unnest(most_common_freqs) AS share
    FROM pg_stats
    WHERE schemaname = current_schema() AND tablename = 'deliveries' AND attname = 'status'
)
SELECT shares.status, size.rows * shares.share AS estimate
FROM shares, size

-- oldest_due_age --
-- Return how long the longest-waiting config that could be sent to now has waited (its oldest due delivery, its rate limit's next slot, or an open circuit's probe time, whichever is latest), null when none could; from the ready set, so a paused config or one waiting for its probe's answer never counts however old its backlog
SELECT extract(epoch FROM now() - min(config_ready_at(next_due_at, circuit, next_probe_at,
                                                      next_send_at)))::float8
FROM config_health
WHERE next_due_at IS NOT NULL AND paused_at IS NULL AND circuit <> 'half_open'
  AND config_ready_at(next_due_at, circuit, next_probe_at, next_send_at) <= now()

-- attempt_history --
-- Count the attempts of a window by config, time bucket and outcome, over the newest attempts (of the scope) only (at most the scan limit, by primary key), and say whether that scan reached the window's start; each attempt finds its config by one primary-key probe (a subquery, so the planner never trades the probes for a scan of all deliveries)
WITH recent AS (
    SELECT delivery_id, outcome, created_at
    FROM delivery_attempts
    WHERE %(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint
    ORDER BY id DESC
    LIMIT %(scan_limit)s
),
reach AS (
    SELECT count(*) < %(scan_limit)s OR min(created_at) < %(since)s AS complete FROM recent
),
in_window AS (
    SELECT (SELECT d.config_id FROM deliveries d WHERE d.id = r.delivery_id) AS config_id,
           date_bin(make_interval(secs => %(bucket_seconds)s), r.created_at, %(since)s) AS bucket,
           r.outcome
    FROM recent r
    WHERE r.created_at >= %(since)s
)
SELECT w.config_id, (SELECT c.name FROM configs c WHERE c.id = w.config_id) AS config_name,
       w.bucket, w.outcome, count(*) AS attempts, (SELECT complete FROM reach) AS complete
FROM in_window w
WHERE w.config_id IS NOT NULL
  AND (%(config_ids)s::text[] IS NULL OR w.config_id = ANY (%(config_ids)s::text[]))
GROUP BY w.config_id, w.bucket, w.outcome
UNION ALL
SELECT NULL, NULL, NULL, NULL, 0, complete FROM reach
