-- config_attempt_rates --
-- Count the given configs' attempts and successes since a moment, from their five-minute periods (the period holding the moment counts whole), for the configs the scope may see
SELECT config_id, sum(attempts)::bigint AS attempts, sum(succeeded)::bigint AS succeeded
FROM config_attempt_counts
WHERE config_id = ANY (%(ids)s::text[]) AND period_start >= attempt_period(%(since)s)
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
GROUP BY config_id

-- configs_needing_attention --
-- The configs (of the scope) a person should look at first, at most `limit`: circuits open or half-open, then the most failed or unanswered attempts since a moment (an attempt under way for more than `unanswered` seconds: an endpoint that holds its requests open shows before its first timeout is recorded), then paused ones; each with its failures and attempts since then, and its unanswered attempts
WITH failing AS (
    -- Periods with a failure only, through their index: configs that only succeeded are
    -- never read.
    SELECT config_id, sum(attempts - succeeded)::bigint AS failures
    FROM config_attempt_counts
    WHERE period_start >= attempt_period(%(since)s) AND succeeded < attempts
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    GROUP BY config_id
),
unanswered AS (
    -- Through the index of claims: only deliveries claimed long ago and still under way.
    SELECT config_id, count(*)::bigint AS unanswered, min(claimed_at) AS unanswered_since
    FROM deliveries
    WHERE status = 'delivering'
      AND claimed_at < now() - make_interval(secs => %(unanswered)s::float8)
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    GROUP BY config_id
),
held AS (
    SELECT config_id FROM config_health
    WHERE (paused_at IS NOT NULL OR circuit <> 'closed')
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
),
candidates AS (
    SELECT config_id FROM held
    UNION
    SELECT config_id FROM failing
    UNION
    SELECT config_id FROM unanswered
)
SELECT c.id, c.name, c.endpoint, config_health_state(h) AS state, h.last_failure,
       h.last_failure_at, h.reason, coalesce(f.failures, 0) AS failures, n.attempts,
       coalesce(u.unanswered, 0) AS unanswered, u.unanswered_since
FROM candidates x
JOIN configs c ON c.id = x.config_id
JOIN config_health h ON h.config_id = c.id
LEFT JOIN failing f ON f.config_id = c.id
LEFT JOIN unanswered u ON u.config_id = c.id
CROSS JOIN LATERAL (SELECT coalesce(sum(n.attempts), 0)::bigint AS attempts
                    FROM config_attempt_counts n
                    WHERE n.config_id = c.id
                      AND n.period_start >= attempt_period(%(since)s)) n
WHERE c.deleted_at IS NULL AND c.active
-- Open circuits first; then most failed or unanswered attempts, and of as many the larger
-- share failed; paused ones (a person already holds them) last.
ORDER BY h.paused_at IS NULL AND h.circuit <> 'closed' DESC,
         coalesce(f.failures, 0) + coalesce(u.unanswered, 0) DESC,
         coalesce(f.failures, 0)::float8 / greatest(n.attempts, 1) DESC,
         h.paused_at IS NOT NULL DESC, c.id
LIMIT %(limit)s
