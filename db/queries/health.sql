-- settle_steps --
-- The settlement of in-flight counts and circuit breakers, written once (included by settle_config_health and record_and_settle): for the claims in the statement's `settle_input` (config_id, delivery_id, claim_token, verdict, error, freed, position, sent_at), free the configs' in-flight slots and move each circuit by the verdicts, in send order; `settled` holds every config settled, `health_wake` wakes the dispatchers when something became claimable
--
-- Verdicts: `success` (2xx), `failure` (a retryable failure: 408, 429, 5xx, network error,
-- timeout), `neutral` (the endpoint answered but the request was refused for good, or the
-- request never left), `none` (a claim handed back without an attempt). `freed` says the
-- claim ended here (its result moved the delivery, or it was handed back): only then does
-- the in-flight count drop, so a late result of a recovered claim is not counted twice.
--
-- closed -> open: `failures_to_open` consecutive failures, or a failure ratio of at least
-- `failure_ratio` over the window with at least `min_volume` judged attempts. Consecutive in
-- the order the attempts were sent: a failure sent before the latest success does not count,
-- and a success newer than any seen before starts the run again from the failures of its
-- batch sent after it (so a run never holds a failure sent before a success). The probe
-- (the claim in `probe_token`) decides a half-open circuit: a success closes it (the ramp
-- starts and the held time stops counting), a failure re-opens it with twice the interval
-- (up to `max_probe_interval`), anything else re-opens it with the probe due at once.
batch AS (
    SELECT config_id,
           count(*) FILTER (WHERE freed) AS freed,
           count(*) FILTER (WHERE verdict IN ('success', 'failure')) AS judged,
           count(*) FILTER (WHERE verdict = 'failure') AS failures,
           array_agg(sent_at) FILTER (WHERE verdict = 'failure') AS failures_sent,
           max(sent_at) FILTER (WHERE verdict = 'success') AS success_sent,
           (array_agg(error ORDER BY position DESC) FILTER (WHERE verdict = 'failure'))[1]
               AS last_failure,
           array_agg(claim_token) AS tokens,
           array_agg(verdict) AS verdicts
    FROM settle_input
    GROUP BY config_id
),
locked AS MATERIALIZED (
    -- Same lock order as the claim (config id): no deadlock between them.
    SELECT h.*, config_cap(h, %(cap)s::integer, %(ramp)s::float8) AS cap
    FROM config_health h
    WHERE h.config_id IN (SELECT config_id FROM batch)
    ORDER BY h.config_id
    FOR UPDATE
),
counted AS MATERIALIZED (
    SELECT h.config_id, h.circuit AS was, h.in_flight, h.cap, h.paused_at, b.freed,
           b.failures, b.last_failure, h.probe_interval_seconds,
           h.held_seconds, h.held_since,
           -- the probe's verdict when the probe's claim is in this batch
           (SELECT v FROM unnest(b.tokens, b.verdicts) AS p (token, v)
            WHERE p.token = h.probe_token LIMIT 1) AS probe,
           CASE WHEN b.success_sent > coalesce(h.last_success_sent_at, '-infinity')
                THEN 0 ELSE h.consecutive_failures END
           + (SELECT count(*) FROM unnest(b.failures_sent) AS sent
              WHERE sent > coalesce(greatest(h.last_success_sent_at, b.success_sent),
                                    '-infinity')) AS consecutive,
           greatest(h.last_success_sent_at, b.success_sent) AS last_success_sent_at,
           CASE WHEN h.window_started_at > now() - make_interval(secs => %(window)s::float8)
                THEN h.window_started_at ELSE now() END AS window_start,
           CASE WHEN h.window_started_at > now() - make_interval(secs => %(window)s::float8)
                THEN h.window_attempts ELSE 0 END + b.judged AS window_attempts,
           CASE WHEN h.window_started_at > now() - make_interval(secs => %(window)s::float8)
                THEN h.window_failures ELSE 0 END + b.failures AS window_failures
    FROM locked h
    JOIN batch b USING (config_id)
),
decided AS MATERIALIZED (
    SELECT c.*,
           CASE
               WHEN c.was = 'half_open' AND c.probe = 'success' THEN 'closed'
               WHEN c.was = 'half_open' AND c.probe IS NOT NULL THEN 'open'
               WHEN c.was = 'closed' AND c.consecutive >= %(failures_to_open)s::integer THEN 'open'
               WHEN c.was = 'closed' AND c.window_attempts >= %(min_volume)s::integer
                    AND c.window_failures >= %(failure_ratio)s::float8 * c.window_attempts THEN 'open'
               ELSE c.was
           END AS circuit,
           CASE
               WHEN c.was = 'half_open' AND c.probe = 'success'
                   THEN 'the probe succeeded'
               WHEN c.was = 'half_open' AND c.probe = 'failure'
                   THEN 'the probe failed: ' || coalesce(c.last_failure, 'retryable failure')
               WHEN c.was = 'half_open' AND c.probe IS NOT NULL
                   THEN 'the probe ended without a verdict; probing again'
               WHEN c.was = 'closed' AND c.consecutive >= %(failures_to_open)s::integer
                   THEN c.consecutive || ' consecutive failures'
               ELSE c.window_failures || ' of ' || c.window_attempts
                    || ' attempts failed within the window'
           END AS why
    FROM counted c
),
settled AS (
    UPDATE config_health h
    SET in_flight = greatest(0, h.in_flight - d.freed),
        circuit = d.circuit,
        consecutive_failures = CASE WHEN d.circuit = 'closed' AND d.was <> 'closed' THEN 0
                                    ELSE d.consecutive END,
        last_success_sent_at = d.last_success_sent_at,
        window_started_at = CASE WHEN d.circuit = d.was THEN d.window_start END,
        window_attempts = CASE WHEN d.circuit = d.was THEN d.window_attempts ELSE 0 END,
        window_failures = CASE WHEN d.circuit = d.was THEN d.window_failures ELSE 0 END,
        last_failure = coalesce(d.last_failure, h.last_failure),
        last_failure_at = CASE WHEN d.failures > 0 THEN now() ELSE h.last_failure_at END,
        opened_at = CASE WHEN d.circuit = 'closed' THEN NULL
                         WHEN d.was = 'closed' AND d.circuit = 'open' THEN now()
                         ELSE h.opened_at END,
        probe_interval_seconds = CASE
            WHEN d.circuit = 'closed' THEN NULL
            WHEN d.was = 'closed' AND d.circuit = 'open' THEN %(probe_interval)s::float8
            WHEN d.probe = 'failure'
                THEN least(%(max_probe_interval)s::float8, 2 * h.probe_interval_seconds)
            ELSE h.probe_interval_seconds END,
        next_probe_at = CASE
            WHEN d.circuit = 'closed' THEN NULL
            WHEN d.was = 'closed' AND d.circuit = 'open'
                THEN now() + make_interval(secs => %(probe_interval)s::float8)
            WHEN d.probe = 'failure'
                THEN now() + make_interval(secs => least(%(max_probe_interval)s::float8,
                                                         2 * h.probe_interval_seconds))
            WHEN d.probe IS NOT NULL THEN now()
            ELSE h.next_probe_at END,
        probe_token = CASE WHEN d.probe IS NOT NULL THEN NULL ELSE h.probe_token END,
        -- Held time: an opening circuit starts a hold (unless a pause already did); a closing
        -- one ends it (unless the config is paused) and adds it to the held seconds.
        held_since = CASE
            WHEN d.was = 'closed' AND d.circuit = 'open' THEN coalesce(h.held_since, now())
            WHEN d.circuit = 'closed' AND d.was <> 'closed' AND h.paused_at IS NULL THEN NULL
            ELSE h.held_since END,
        held_seconds = CASE
            WHEN d.circuit = 'closed' AND d.was <> 'closed' AND h.paused_at IS NULL
                THEN config_held_seconds(h)
            ELSE h.held_seconds END,
        ramp_started_at = CASE WHEN d.circuit = 'closed' AND d.was <> 'closed' THEN now()
                               ELSE h.ramp_started_at END,
        reason = CASE WHEN d.circuit <> d.was OR d.probe IS NOT NULL THEN d.why
                      ELSE h.reason END,
        changed_at = CASE WHEN d.circuit <> d.was OR d.probe IS NOT NULL THEN now()
                          ELSE h.changed_at END
    FROM decided d
    WHERE h.config_id = d.config_id
    RETURNING h.config_id, d.was, h.circuit, h.reason, h.consecutive_failures, h.next_probe_at,
              -- a slot opened for a config that had none, or a circuit closed or re-probes now
              (d.freed > 0 AND d.in_flight >= d.cap)
              OR (h.circuit = 'closed' AND d.was <> 'closed')
              OR (h.circuit = 'open' AND h.next_probe_at <= now()) AS claimable
),
health_wake AS (
    SELECT notify_deliveries_due()
    FROM (SELECT 1 FROM settled WHERE claimable LIMIT 1) s
)

-- settle_config_health --
-- After claims are handed back or attempts recorded (in that transaction): free the configs' in-flight slots and move each circuit by the verdicts, in batch order; return every config settled, and wake the dispatchers when something became claimable
WITH settle_input AS (
    SELECT d.config_id, r.delivery_id, r.claim_token, r.verdict, r.error, r.freed, r.position,
           coalesce(r.sent_at, now() + make_interval(secs => r.position / 1e6)) AS sent_at
    FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(verdicts)s::text[],
                %(errors)s::text[], %(freed)s::boolean[], %(sent_at)s::timestamptz[])
        WITH ORDINALITY AS r (delivery_id, claim_token, verdict, error, freed, sent_at, position)
    JOIN deliveries d ON d.id = r.delivery_id
),
/* include settle_steps */
SELECT config_id, was AS source, circuit AS target, reason, consecutive_failures,
       next_probe_at, (SELECT count(*) FROM health_wake) AS woken
FROM settled

-- lock_counted_configs --
-- Lock, in the claim's lock order, the health rows whose in-flight count or probe could disagree with the deliveries in flight: every config counting attempts in flight, probing, or with a delivery in flight
SELECT h.config_id
FROM config_health h
WHERE h.in_flight > 0 OR h.circuit = 'half_open'
   OR h.config_id IN (SELECT config_id FROM deliveries WHERE status = 'delivering')
ORDER BY h.config_id
FOR UPDATE

-- reconcile_in_flight --
-- With the configs' health rows locked (so no claim, record or hand-back of theirs is between its two halves): set each in-flight count to the deliveries really in flight, and re-open a half-open circuit whose probe is no longer in flight with the probe due now; return what was corrected
--
-- Every path keeps these in step in one transaction, so a correction means a path did not
-- (or someone changed rows by hand): without it the count would hold a config at its cap,
-- or its circuit half-open, for good.
WITH flying AS (
    SELECT config_id, count(*) AS in_flight, array_agg(claim_token) AS tokens
    FROM deliveries
    WHERE status = 'delivering' AND config_id = ANY(%(ids)s)
    GROUP BY config_id
),
actual AS (
    SELECT h.config_id, h.in_flight AS counted, coalesce(f.in_flight, 0) AS in_flight,
           h.circuit = 'half_open' AND NOT coalesce(h.probe_token = ANY(f.tokens), false)
               AS probe_lost
    FROM config_health h
    LEFT JOIN flying f USING (config_id)
    WHERE h.config_id = ANY(%(ids)s)
),
corrected AS (
    UPDATE config_health h
    SET in_flight = a.in_flight,
        circuit = CASE WHEN a.probe_lost THEN 'open' ELSE h.circuit END,
        probe_token = CASE WHEN a.probe_lost THEN NULL ELSE h.probe_token END,
        next_probe_at = CASE WHEN a.probe_lost THEN now() ELSE h.next_probe_at END,
        reason = CASE WHEN a.probe_lost THEN 'the probe was no longer in flight; probing again'
                      ELSE h.reason END,
        changed_at = CASE WHEN a.probe_lost THEN now() ELSE h.changed_at END
    FROM actual a
    WHERE h.config_id = a.config_id AND (a.counted <> a.in_flight OR a.probe_lost)
    RETURNING h.config_id, a.counted, a.in_flight, a.probe_lost
),
wake AS (
    SELECT notify_deliveries_due() FROM (SELECT 1 FROM corrected LIMIT 1) c
)
SELECT config_id, counted, in_flight, probe_lost, (SELECT count(*) FROM wake) AS woken
FROM corrected

-- pause_config --
-- Pause a config that is not paused: nothing of it is attempted until it is resumed, and the held time stops counting against its deliveries' retry windows
UPDATE config_health h
SET paused_at = now(),
    held_since = coalesce(h.held_since, now()),
    reason = %(reason)s,
    changed_at = now()
FROM configs c
WHERE h.config_id = %(id)s AND c.id = h.config_id AND c.deleted_at IS NULL
  AND h.paused_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)
RETURNING h.config_id

-- resume_config --
-- Resume a paused config: its backlog is released by the ramp, and the held time ends unless its circuit is still open; wake the dispatchers
WITH resumed AS (
    UPDATE config_health h
    SET paused_at = NULL,
        held_since = CASE WHEN h.circuit = 'closed' THEN NULL ELSE h.held_since END,
        held_seconds = CASE WHEN h.circuit = 'closed'
                            THEN config_held_seconds(h)
                            ELSE h.held_seconds END,
        ramp_started_at = now(),
        reason = %(reason)s,
        changed_at = now()
    FROM configs c
    WHERE h.config_id = %(id)s AND c.id = h.config_id AND c.deleted_at IS NULL
      AND h.paused_at IS NOT NULL
      AND (%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)
    RETURNING h.config_id
)
SELECT config_id, notify_deliveries_due() FROM resumed

-- reset_circuit --
-- Close an open or half-open circuit by hand (an operator knows the endpoint is back): counters cleared, the ramp starts, the held time ends unless the config is paused; wake the dispatchers
WITH reset AS (
    UPDATE config_health h
    SET circuit = 'closed',
        consecutive_failures = 0,
        window_started_at = NULL, window_attempts = 0, window_failures = 0,
        opened_at = NULL, next_probe_at = NULL, probe_interval_seconds = NULL,
        probe_token = NULL,
        held_since = CASE WHEN h.paused_at IS NULL THEN NULL ELSE h.held_since END,
        held_seconds = CASE WHEN h.paused_at IS NULL
                            THEN config_held_seconds(h)
                            ELSE h.held_seconds END,
        ramp_started_at = now(),
        reason = %(reason)s,
        changed_at = now()
    FROM configs c
    WHERE h.config_id = %(id)s AND c.id = h.config_id AND c.deleted_at IS NULL
      AND h.circuit <> 'closed'
      AND (%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)
    RETURNING h.config_id
)
SELECT config_id, notify_deliveries_due() FROM reset

-- set_config_limits --
-- Set a config's in-flight cap and rate limit where asked (null: the default cap, no rate limit)
UPDATE config_health
SET max_in_flight = CASE WHEN %(set_cap)s THEN %(max_in_flight)s::integer ELSE max_in_flight END,
    rate_per_second = CASE WHEN %(set_rate)s THEN %(rate_per_second)s::float8
                           ELSE rate_per_second END,
    next_send_at = CASE WHEN %(set_rate)s THEN NULL ELSE next_send_at END
WHERE config_id = %(id)s

-- note_config_health_reason --
-- Record why a config's health or activity last changed
UPDATE config_health SET reason = %(reason)s, changed_at = now() WHERE config_id = %(id)s

-- config_health --
-- Return the health rows of the given configs that the scope may see
SELECT config_id, config_health_state(config_health) AS state, paused_at,
       consecutive_failures, opened_at, next_probe_at, last_failure, last_failure_at, reason,
       changed_at, in_flight, max_in_flight, rate_per_second
FROM config_health
WHERE config_id = ANY(%(ids)s)
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)

-- held_due_deliveries --
-- Count due pending deliveries whose attempts are withheld because their config is paused or its circuit is not closed, by health state, stopping at the cap
SELECT state, count(*) AS deliveries
FROM (
    SELECT config_health_state(h) AS state
    FROM config_health h
    CROSS JOIN LATERAL (SELECT 1 FROM deliveries d
                        WHERE d.config_id = h.config_id AND d.status = 'pending'
                          AND d.next_attempt_at <= now()
                        LIMIT %(cap)s) d
    WHERE h.paused_at IS NOT NULL OR h.circuit <> 'closed'
    LIMIT %(cap)s
) held
GROUP BY state

-- act_as --
-- Name who makes this transaction's changes, and why, for the health history's triggers (local to the transaction, so a pooled connection carries nothing over)
SELECT set_config('webhooks.actor', coalesce(%(actor)s, ''), true),
       set_config('webhooks.reason', coalesce(%(reason)s, ''), true)

-- health_changes_of_config --
-- Page back through a config's health history, newest first, below an id cursor, if the scope may see it; to a tenant, an actor that is none of its own API tokens or portal sessions (the platform's tokens, its on-call commands) is named by the given word for the platform
--
-- The names of the platform's tokens and of the people who run its commands are the
-- platform's: a tenant reads that the platform acted, not who.
SELECT id, config_id, changed_at, change, circuit,
       CASE WHEN %(scope_tenant)s::bigint IS NULL OR h.actor IS NULL
                 OR EXISTS (SELECT 1 FROM api_tokens k
                            WHERE k.name = h.actor AND k.tenant_id = %(scope_tenant)s::bigint)
                 OR EXISTS (SELECT 1 FROM portal_sessions s
                            WHERE s.tenant_id = %(scope_tenant)s::bigint
                              AND s.id = CASE WHEN h.actor ~ %(session_actor)s
                                              THEN substring(h.actor FROM '[0-9]+$')::bigint
                                         END)
            THEN h.actor ELSE %(platform_actor)s END AS actor,
       reason
FROM config_health_changes h
WHERE config_id = %(id)s AND (%(before)s::bigint IS NULL OR id < %(before)s::bigint)
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
ORDER BY id DESC
LIMIT %(limit)s
