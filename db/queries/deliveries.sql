-- claim_due_deliveries --
-- Claim up to `limit` due deliveries fairly across tenants and, within each, across its configs, within each tenant's rate and each config's cap, rate and ramp, nothing of a paused or open config but one probe when it is due, no more of a config than the worker has room for; count them in flight on the configs' health rows and move the tenants' turns in the same statement; return what the attempt needs, read from the config as it is now
--
-- A worker sends at most a share of one config at once (its maxInFlight, or the per-worker
-- default WEBHOOKS_ENDPOINT_CONCURRENCY, `cap`) and holds at most `hold` shares: one sending,
-- the others ready behind it. A claim takes at most the worker's room for each config (`hold`
-- shares less what it holds: `room_ids`/`rooms` for the configs it holds), so that one
-- config's backlog never fills the worker while other configs wait.
--
-- The claim is driven by the tenants' and the configs' turns, not by the global due order:
-- it walks the tenants with something due, the longest-unserved first (tenant_turns, with the
-- wakes left since the last claims: migration 0034), and within each of them its configs in
-- turn order through the tenant's turns index, stopping after the tenants and configs it can
-- take; a config whose backlog is held (paused, open, at its cap, throttled) is filtered out
-- by its health row alone and its deliveries are never read, and a tenant over its
-- deliveriesPerSecond waits in its turn's index until its rate allows. Each config's oldest
-- due deliveries are read through the (config_id, next_attempt_at) index without a lock, and
-- only those the claim takes are locked (SKIP LOCKED, in the claim's order: a delivery another
-- worker holds gives its place to the next). So no tenant's or config's backlog of any size
-- delays another's delivery or slows the claim, and configs and tenants with nothing due cost
-- the claim nothing, however many.
--
-- The health rows are read without a lock and locked last, in config id order (the order
-- every statement that locks several of them uses, so that none deadlocks with another), just
-- before the UPDATE that counts the claimed deliveries in: a row lock taken first would be held
-- through the whole claim, and every record of that config (which frees slots on the same
-- row) would queue behind it.
-- That UPDATE checks again, on the row as it is now, that the slots and the probe are still
-- there and that the config's version is the one read; when a concurrent claim of another
-- worker took them, or the config changed meanwhile, `claim_counted` aborts this claim
-- (SQLSTATE 40001) and the caller runs it again. So the cap is counted, never inferred, of
-- the workers racing for an open circuit exactly one takes its probe (a compare-and-swap on
-- the circuit), and a claim never returns an endpoint or a secret a committed change
-- replaced: the config's row is read from the statement's snapshot, and every change of
-- what a request is sent with counts up the version on the health row this step locks, so a
-- change that committed while the claim ran is seen here, and the claim is run again on a
-- snapshot that holds it. A rate-limited tenant's schedule is moved the same way (its row
-- locked, the schedule checked to be the one read, else the claim runs again); any other
-- tenant's row is moved only if no other claim holds it (SKIP LOCKED): its turn is a matter
-- of order, and the claim that holds it moves it.
WITH wakes AS MATERIALIZED (
    -- What made configs ready, or ready sooner, since the claims last looked (oldest first).
    SELECT w.id, w.tenant_id, w.ready_at
    FROM tenant_wakes w
    ORDER BY w.id
    LIMIT 1000
),
woken AS MATERIALIZED (
    SELECT tenant_id, min(ready_at) AS ready_at FROM wakes GROUP BY tenant_id
),
tenants AS MATERIALIZED (
    -- Tenants that may send now and may have something due, the longest-unserved first, with
    -- how many deliveries each may take: the walk of their turns' index, stopping after
    -- `limit` tenants (claimable_tenants, migration 0034).
    SELECT t.tenant_id, t.place, t.rate, t.next_send_at, t.quota
    FROM claimable_tenants(%(limit)s::integer, %(rate_burst)s::float8,
                           ARRAY(SELECT tenant_id FROM woken ORDER BY tenant_id),
                           ARRAY(SELECT ready_at FROM woken ORDER BY tenant_id)) t
),
health AS MATERIALIZED (
    -- Within each tenant, configs that may send now and have something due, the
    -- longest-unserved first, with how many deliveries each may take; as many configs of
    -- each tenant as its share of the claim.
    SELECT h.tenant_id, h.config_id, h.place, h.circuit, h.rate_per_second, h.max_in_flight,
           h.version, h.held_now, h.quota
    FROM claimable_configs(ARRAY(SELECT tenant_id FROM tenants ORDER BY place),
                           (SELECT ceil(%(limit)s::integer / greatest(1, count(*))::float8)::integer
                            FROM tenants),
                           %(cap)s::integer, %(ramp)s::float8, %(rate_burst)s::float8,
                           %(capacity)s::integer, %(hold)s::integer, %(room_ids)s::text[],
                           %(rooms)s::integer[]) h
),
shares AS MATERIALIZED (
    -- Each config's share of its tenant's share of the claim: what the claim would take of
    -- it if every config had as many due (a tenth of a claim over ten configs).
    SELECT h.config_id, h.quota,
           ceil(ceil(%(limit)s::integer / n.tenants::float8)
                / count(*) OVER (PARTITION BY h.tenant_id))::integer AS share
    FROM health h
    CROSS JOIN (SELECT greatest(1, count(DISTINCT tenant_id)) AS tenants
                FROM health WHERE quota > 0) n
    WHERE h.quota > 0
),
due AS MATERIALIZED (
    -- Each config's oldest due deliveries, read without a lock: its share, and more up to its
    -- quota only when the shares did not fill the claim (due_deliveries, migration 0034).
    SELECT p.id, p.config_id, p.next_attempt_at
    FROM due_deliveries(ARRAY(SELECT config_id FROM shares ORDER BY config_id),
                        ARRAY(SELECT quota FROM shares ORDER BY config_id),
                        ARRAY(SELECT share FROM shares ORDER BY config_id),
                        %(limit)s::integer) p
),
ranked AS MATERIALIZED (
    -- Round-robin across tenants, and across configs within each: every tenant's first
    -- delivery before any tenant's second, and a tenant's turns go to its configs in turn,
    -- oldest due first within a config; a tenant takes no more than its rate's burst.
    SELECT r.id, r.config_id, r.tenant_place, r.in_tenant
    FROM (SELECT c.id, c.config_id, c.tenant_place, c.quota,
                 row_number() OVER (PARTITION BY c.tenant_id
                                    ORDER BY c.in_config, c.config_place) AS in_tenant
          FROM (SELECT d.id, d.config_id, h.tenant_id, h.place AS config_place,
                       t.place AS tenant_place, t.quota,
                       row_number() OVER (PARTITION BY d.config_id
                                          ORDER BY d.next_attempt_at, d.id) AS in_config
                FROM due d
                JOIN health h USING (config_id)
                JOIN tenants t USING (tenant_id)) c) r
    WHERE r.quota IS NULL OR r.in_tenant <= r.quota
),
picked AS MATERIALIZED (
    -- The first `limit` of them in that order that no other worker holds, locked; one that
    -- another claim took since this statement began is passed over.
    SELECT d.id, d.config_id, r.in_tenant, r.tenant_place
    FROM ranked r
    JOIN deliveries d ON d.id = r.id
    WHERE d.status = 'pending' AND d.next_attempt_at <= now()
    ORDER BY r.in_tenant, r.tenant_place
    LIMIT %(limit)s::integer
    FOR UPDATE OF d SKIP LOCKED
),
claimed AS (
    UPDATE deliveries d
    SET status = 'delivering',
        claimed_at = now(),
        claimed_by = %(owner)s::text,
        claim_token = %(token)s::uuid,
        -- The retry window's clock stops while the config is held (paused or open): the
        -- generation's start moves forward by the seconds held since this delivery's last
        -- claim, so a held delivery spends none of its window. A delivery under way without
        -- a mark was last claimed before held time was counted (migration 0007), when its
        -- config had held nothing: its mark is 0.
        generation_started_at = CASE
            WHEN d.generation_started_at IS NULL THEN now()
            ELSE d.generation_started_at
                 + make_interval(secs => h.held_now - coalesce(d.held_mark, 0)) END,
        held_mark = h.held_now,
        webhook_id = coalesce(d.webhook_id, webhook_message_id()),
        updated_at = now()
    FROM picked, health h
    WHERE d.id = picked.id AND h.config_id = picked.config_id
    RETURNING d.id, d.event_id, d.tenant_id, d.config_id, d.attempt_count, d.replay_generation,
              d.generation_started_at, d.last_backoff_seconds, d.webhook_id,
              h.circuit = 'open' AS probe, h.max_in_flight, h.rate_per_second,
              h.version AS config_version,
              d.sequence, d.ordering_key, picked.in_tenant, picked.tenant_place
),
locked AS MATERIALIZED (
    SELECT h.config_id
    FROM config_health h
    WHERE h.config_id IN (SELECT config_id FROM claimed)
    ORDER BY h.config_id
    FOR UPDATE
),
counted AS (
    -- Count them in flight, take the probe, the rate's next slot and the ramp's end, each
    -- guarded by the state the claim read (re-checked on the locked row). Counted from what
    -- `claimed` moved, never from `picked`.
    UPDATE config_health h
    SET in_flight = h.in_flight + c.claimed,
        served_at = now(),
        circuit = CASE WHEN h.circuit = 'open' THEN 'half_open' ELSE h.circuit END,
        probe_token = CASE WHEN h.circuit = 'open' THEN %(token)s::uuid ELSE h.probe_token END,
        changed_at = CASE WHEN h.circuit = 'open' THEN now() ELSE h.changed_at END,
        reason = CASE WHEN h.circuit = 'open' THEN 'probing the endpoint with one delivery'
                      ELSE h.reason END,
        next_send_at = CASE WHEN h.rate_per_second IS NOT NULL
                            THEN greatest(coalesce(h.next_send_at, now()), now())
                                 + make_interval(secs => c.claimed / h.rate_per_second) END,
        ramp_started_at = CASE WHEN h.ramp_started_at > now() - make_interval(secs => %(ramp)s::float8)
                               THEN h.ramp_started_at END
    FROM (SELECT d.config_id, count(*) AS claimed, min(r.circuit) AS circuit,
                 min(r.version) AS version
          FROM claimed d JOIN health r USING (config_id)
          GROUP BY d.config_id) c
    JOIN locked USING (config_id)
    WHERE h.config_id = c.config_id
      AND h.version = c.version
      AND h.circuit = c.circuit
      AND h.paused_at IS NULL
      AND h.in_flight + c.claimed <= config_cap(h, %(cap)s::integer, %(ramp)s::float8)
      AND (h.circuit = 'closed' OR h.next_probe_at <= now())
      AND (h.next_send_at IS NULL OR h.next_send_at <= now())
    RETURNING h.config_id
),
looked AS MATERIALIZED (
    -- Every tenant this claim looked at or was woken for, with what it took of each and
    -- (for those it looked at) the earliest turn of their configs as this statement sees
    -- them: its claims' own effect on those turns is seen by the next claim.
    SELECT x.tenant_id, t.tenant_id IS NOT NULL AS visited, t.rate, t.next_send_at,
           w.ready_at AS woken_at,
           (SELECT count(*) FROM claimed c WHERE c.tenant_id = x.tenant_id) AS claimed,
           CASE WHEN t.tenant_id IS NOT NULL THEN (
               SELECT config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                                     h.served_at)
               FROM config_health h
               WHERE h.tenant_id = x.tenant_id
                 AND h.next_due_at IS NOT NULL AND h.paused_at IS NULL
                 AND h.circuit <> 'half_open'
               ORDER BY h.tenant_id, config_turn_at(h.next_due_at, h.circuit, h.next_probe_at,
                                                    h.next_send_at, h.served_at)
               LIMIT 1) END AS ready_at
    FROM (SELECT tenant_id FROM tenants UNION SELECT tenant_id FROM woken) x
    LEFT JOIN tenants t USING (tenant_id)
    LEFT JOIN woken w USING (tenant_id)
),
tenant_rows AS MATERIALIZED (
    -- The rows of a rate-limited tenant the claim took something of are locked (waiting for
    -- another claim of it); the others only when free.
    SELECT t.tenant_id
    FROM tenant_turns t
    WHERE t.tenant_id IN (SELECT tenant_id FROM looked WHERE rate IS NOT NULL AND claimed > 0)
    ORDER BY t.tenant_id
    FOR NO KEY UPDATE
),
tenant_rows_free AS MATERIALIZED (
    SELECT t.tenant_id
    FROM tenant_turns t
    WHERE t.tenant_id IN (SELECT tenant_id FROM looked)
      AND t.tenant_id NOT IN (SELECT tenant_id FROM tenant_rows)
    ORDER BY t.tenant_id
    FOR NO KEY UPDATE SKIP LOCKED
),
turned AS (
    -- A tenant looked at goes to the back of the round, its ready time what was seen; one
    -- only woken keeps its place, ready no later than its wakes say; a rate-limited one's
    -- schedule moves on by what was taken, guarded by the schedule read.
    UPDATE tenant_turns t
    SET served_at = CASE WHEN l.visited THEN now() ELSE t.served_at END,
        ready_at = CASE WHEN l.visited THEN l.ready_at ELSE least(t.ready_at, l.woken_at) END,
        next_send_at = CASE WHEN l.rate IS NOT NULL AND l.claimed > 0
                            THEN greatest(coalesce(t.next_send_at, now()), now())
                                 + make_interval(secs => l.claimed / l.rate)
                            ELSE t.next_send_at END
    FROM looked l
    WHERE t.tenant_id = l.tenant_id
      AND t.tenant_id IN (SELECT tenant_id FROM tenant_rows
                          UNION ALL SELECT tenant_id FROM tenant_rows_free)
      AND (l.rate IS NULL OR l.claimed = 0 OR t.next_send_at IS NOT DISTINCT FROM l.next_send_at)
    RETURNING t.tenant_id, l.rate IS NOT NULL AND l.claimed > 0 AS rate_counted
),
woken_done AS (
    -- The wakes this claim read of the tenants whose rows it moved: merged. A wake committed
    -- since this statement began is not among them, and is merged by the next claim.
    DELETE FROM tenant_wakes w
    WHERE w.id IN (SELECT id FROM wakes)
      AND w.tenant_id IN (SELECT tenant_id FROM turned)
)
SELECT d.id, d.event_id, e.type AS event_type, e.payload::text AS payload, e.occurred_at,
       d.tenant_id, d.config_id, c.active AS config_active, c.endpoint, c.secret,
       ARRAY(SELECT previous.entry ->> 'secret'
             FROM jsonb_array_elements(c.previous_secrets) WITH ORDINALITY
                 AS previous (entry, position)
             WHERE (previous.entry ->> 'expires_at')::timestamptz > now()
             ORDER BY previous.position) AS previous_secrets,
       d.attempt_count, d.replay_generation, d.generation_started_at,
       d.last_backoff_seconds AS last_backoff, now() AS claimed_at, d.webhook_id,
       e.trace_parent, e.trace_state, d.probe, d.max_in_flight, d.rate_per_second, e.source,
       e.message_key,
       d.config_version,
       -- an ordered config's requests say the key and its place (webhook-sequence)
       CASE WHEN c.ordering = 'per_key' THEN d.sequence END AS sequence,
       CASE WHEN c.ordering = 'per_key' AND d.sequence IS NOT NULL THEN d.ordering_key END
           AS ordering_key,
       -- its type is deprecated in the catalog: its requests say so (webhook-deprecated)
       coalesce((SELECT t.deprecated_at IS NOT NULL FROM event_types t WHERE t.name = e.type),
                false) AS deprecated
FROM claimed d
JOIN events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
JOIN configs c ON c.id = d.config_id
WHERE claim_counted((SELECT count(DISTINCT config_id) FROM claimed)
                    + (SELECT count(*) FROM looked WHERE rate IS NOT NULL AND claimed > 0),
                    (SELECT count(*) FROM counted)
                    + (SELECT count(*) FROM turned WHERE rate_counted))
ORDER BY d.in_tenant, d.tenant_place

-- record_and_settle --
-- Append one attempt per result (once per claim: a result recorded again adds nothing), move each delivery still claimed with the given token to its next state (a non-2xx result of an inactive config becomes cancelled, but a final failure of a config deactivated for answering 410 among the results of this record, `gone`, stays failed), announce each delivery whose budget ran out (`exhausted`) to the operational tenant, and settle the configs' in-flight counts and circuit breakers with the verdicts of the claims that moved; return the deliveries that changed (kind 'moved') and every config settled (kind 'settled')
--
-- One statement, run on its own (autocommit): the health rows it locks last are released as
-- it ends, with no round trip to the worker between them and the commit, so the claims of
-- other workers that wait for those rows wait only for this statement.
WITH results AS (
    SELECT *
    FROM unnest(%(ids)s::bigint[], %(tokens)s::uuid[], %(attempt_numbers)s::integer[],
                %(generations)s::integer[], %(endpoints)s::text[], %(outcomes)s::text[],
                %(status_codes)s::integer[], %(durations_ms)s::integer[],
                %(excerpts)s::text[], %(errors)s::text[], %(next_statuses)s::text[],
                %(next_delays)s::float8[], %(last_errors)s::text[], %(next_backoffs)s::float8[],
                %(verdicts)s::text[], %(sent_at)s::timestamptz[],
                %(request_headers)s::jsonb[], %(exhausted)s::boolean[])
        WITH ORDINALITY
        AS r (delivery_id, claim_token, attempt_number, replay_generation, endpoint, outcome,
              status_code, duration_ms, response_excerpt, error, next_status, next_delay,
              last_error, next_backoff, verdict, sent_at, request_headers, exhausted,
              position)
),
attempts AS (
    INSERT INTO delivery_attempts (delivery_id, tenant_id, attempt_number, replay_generation,
                                   endpoint, outcome, status_code, duration_ms,
                                   response_excerpt, error, claim_token, request_headers)
    SELECT r.delivery_id, delivery.tenant_id, r.attempt_number, r.replay_generation,
           r.endpoint, r.outcome, r.status_code, r.duration_ms, r.response_excerpt, r.error,
           r.claim_token, r.request_headers
    FROM results r
    -- Index probes per result (lateral LIMIT 1s, which the planner cannot turn into a hash
    -- anti-join over the whole attempts table, as it did for NOT EXISTS in a generic plan).
    CROSS JOIN LATERAL (SELECT count(*) AS found, min(x.tenant_id) AS tenant_id
                        FROM (SELECT d.tenant_id FROM deliveries d WHERE d.id = r.delivery_id
                              LIMIT 1) x) delivery
    CROSS JOIN LATERAL (SELECT count(*) AS found
                        FROM (SELECT 1 FROM delivery_attempts a
                              WHERE a.delivery_id = r.delivery_id
                                AND a.claim_token = r.claim_token
                              LIMIT 1) x) recorded
    WHERE delivery.found = 1 AND recorded.found = 0
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
    SET status = CASE WHEN r.next_status = 'succeeded' OR c.active
                           OR (r.next_status = 'failed' AND c.id = ANY(%(gone)s::text[]))
                      THEN r.next_status
                      ELSE 'cancelled' END,
        -- A request the SSRF guard stopped never went out: it spends none of the budget, and
        -- a generation with no request sent has not started its retry window.
        attempt_count = d.attempt_count + (r.outcome <> 'blocked')::integer,
        generation_started_at = CASE WHEN r.outcome = 'blocked' AND d.attempt_count = 0
                                     THEN NULL ELSE d.generation_started_at END,
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
    -- Guarded by the claim token: a delivery holds one only while it is `delivering` (every
    -- statement that moves it on clears it). Not by `d.status = 'delivering'` as well: with
    -- it, the planner walks every delivery in flight through the status index, and with them
    -- the dead entries of every one recorded since the last vacuum, instead of looking up
    -- each result's delivery by its key.
    WHERE d.id = r.delivery_id AND c.id = d.config_id AND d.claim_token = r.claim_token
    RETURNING d.id, d.config_id, r.claim_token, d.status, d.next_attempt_at, d.tenant_id,
              d.last_error,
              -- what a delivery whose budget ran out is announced with (`announced`)
              CASE WHEN d.status = 'failed' AND r.exhausted THEN announced_delivery(d) END
                  AS exhausted
),
wake AS (
    SELECT notify_deliveries_due()
    FROM (SELECT 1 FROM moved WHERE status = 'pending' AND next_attempt_at <= now() LIMIT 1) m
),
announced AS (
    -- A delivery failed for good because its budget ran out (attempts or time) is announced
    -- in this statement, when its tenant's are (announces_for(), migration 0033).
    INSERT INTO operational_events (event_id, type, tenant_id, config_id, reason, delivery)
    SELECT 'delivery.exhausted:' || m.id || ':' || (m.exhausted ->> 'replay_generation'),
           'delivery.exhausted', m.tenant_id, m.config_id, m.last_error, m.exhausted
    FROM moved m
    WHERE m.exhausted IS NOT NULL AND announces_for(m.tenant_id)
    ON CONFLICT (event_id) DO NOTHING
),
settle_input AS (
    -- Only the claims that moved a delivery end here: a late result of a recovered claim
    -- frees no slot and judges nothing.
    SELECT m.tenant_id, m.config_id, r.delivery_id, r.claim_token, r.verdict,
           r.last_error AS error, true AS freed, r.position,
           coalesce(r.sent_at, now() + make_interval(secs => r.position / 1e6)) AS sent_at
    FROM moved m
    JOIN results r ON r.delivery_id = m.id AND r.claim_token = m.claim_token
),
/* include settle_steps */,
attempts_counted AS (
    -- Each config's attempts and successes of this period, for exact per-config rates.
    -- Counted once its health row is locked (the IN reads all of `settled` first): that
    -- lock orders every count of one config, so two records never wait on each other here.
    -- The tenant is given (a row trigger would look it up for each new row).
    INSERT INTO config_attempt_counts AS t (tenant_id, config_id, period_start, attempts,
                                            succeeded)
    SELECT min(s.tenant_id), s.config_id, attempt_period(now()), count(*),
           count(*) FILTER (WHERE s.verdict = 'success')
    FROM settle_input s
    WHERE s.config_id IN (SELECT config_id FROM settled)
    GROUP BY s.config_id
    ORDER BY s.config_id
    ON CONFLICT (config_id, period_start) DO UPDATE
    SET attempts = t.attempts + excluded.attempts, succeeded = t.succeeded + excluded.succeeded
)
SELECT 'moved' AS kind, id, claim_token, status, next_attempt_at,
       NULL AS config_id, NULL AS source, NULL AS target, NULL AS reason,
       NULL::integer AS consecutive_failures, NULL::timestamptz AS next_probe_at,
       (SELECT count(*) FROM wake) + (SELECT count(*) FROM health_wake) AS woken
FROM moved
UNION ALL
SELECT 'settled', NULL, NULL, NULL, NULL, config_id, was, circuit, reason,
       consecutive_failures, next_probe_at, 0
FROM settled

-- hand_back_transition --
-- The hand-back transition, written once (included by release_claims and recover_stale_claims): each delivery of the statement's `back` (id, config_id, claim_token, note) with an active config (in `configs_now`) becomes pending again, due as soon as it was before its claim so that it keeps its place in the due order; one whose config is off is cancelled; the claim is cleared and a note, if any, becomes its last error
UPDATE deliveries d
SET status = CASE WHEN c.active THEN 'pending' ELSE 'cancelled' END,
    next_attempt_at = CASE WHEN c.active THEN least(coalesce(d.next_attempt_at, now()), now())
                      END,
    last_error = coalesce(back.note, d.last_error),
    claimed_at = NULL, claimed_by = NULL, claim_token = NULL, updated_at = now()
FROM back, configs_now c
WHERE d.id = back.id AND c.id = back.config_id
RETURNING d.id, d.status, back.claim_token

-- release_claims --
-- Hand claimed deliveries back without an attempt: pending and due again if their config is active, else cancelled
WITH back AS (
    SELECT d.id, d.config_id, d.claim_token, NULL::text AS note
    FROM deliveries d
    JOIN unnest(%(ids)s::bigint[], %(tokens)s::uuid[]) AS r (id, claim_token)
      ON r.id = d.id AND r.claim_token = d.claim_token
    WHERE d.status = 'delivering'
    FOR UPDATE OF d
),
configs_now AS (
    SELECT id, active FROM configs WHERE id IN (SELECT config_id FROM back) ORDER BY id
    FOR SHARE
),
released AS (
    /* include hand_back_transition */
),
wake AS (
    SELECT notify_deliveries_due()
    FROM (SELECT 1 FROM released WHERE status = 'pending' LIMIT 1) r
)
SELECT id, status, claim_token, (SELECT count(*) FROM wake) AS woken FROM released

-- recover_stale_claims --
-- Return claims older than the timeout to pending (config active) or cancelled (inactive), in a bounded batch, saying why on each
WITH back AS (
    SELECT id, config_id, claim_token,
           'claim by ' || coalesce(claimed_by, 'unknown worker')
           || ' went stale; returned to the queue' AS note
    FROM deliveries
    WHERE status = 'delivering' AND claimed_at < now() - make_interval(secs => %(timeout)s)
    ORDER BY claimed_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
configs_now AS (
    SELECT id, active FROM configs WHERE id IN (SELECT config_id FROM back) ORDER BY id
    FOR SHARE
),
recovered AS (
    /* include hand_back_transition */
),
wake AS (
    SELECT notify_deliveries_due()
    FROM (SELECT 1 FROM recovered WHERE status = 'pending' LIMIT 1) r
)
SELECT id, status, claim_token, (SELECT count(*) FROM wake) AS woken FROM recovered

-- seconds_until_next_due --
-- Return the seconds until a claim could next take something (a due delivery of a config that may send, its probe, its rate slot or its tenant's), 0 if now, null if nothing waits; held backlogs are not read
--
-- Paused, half-open and full configs are left out, and those the worker has at its own bound:
-- a claim could take none of their deliveries, and waking for them would spin. What ends those holds (a resume, a recorded
-- result) sends the wake-up NOTIFY. The ready set's index is walked from the earliest: the
-- first config not at its cap ends the walk. A tenant over its deliveriesPerSecond holds its
-- configs until its rate allows: they are left out, and the earliest such time counts.
SELECT CASE WHEN ready IS NOT NULL THEN greatest(0, extract(epoch FROM ready - now()))::float8 END
FROM (SELECT least((
    SELECT config_ready_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at)
    FROM config_health h
    WHERE h.next_due_at IS NOT NULL AND h.paused_at IS NULL AND h.circuit <> 'half_open'
      AND h.in_flight < config_cap(h, %(cap)s, %(ramp)s)
      AND h.config_id <> ALL (%(saturated)s::text[])
      AND NOT EXISTS (SELECT 1 FROM tenant_turns t
                      WHERE t.tenant_id = h.tenant_id AND t.next_send_at > now())
    ORDER BY config_ready_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at)
    LIMIT 1), (
    SELECT t.next_send_at
    FROM tenant_turns t
    WHERE t.ready_at IS NOT NULL AND t.next_send_at > now()
    ORDER BY t.next_send_at
    LIMIT 1)) AS ready
) earliest

-- config_versions --
-- Return the version of each given config now (a worker compares them with those its claims were made at)
SELECT config_id, version FROM config_health WHERE config_id = ANY(%(ids)s::text[])
