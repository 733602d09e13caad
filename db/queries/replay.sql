-- replay_transition --
-- The replay transition, written once (included by the replay statements): each delivery of the statement's `target` (id, status as locked) becomes pending and due now; a failed one starts a new generation (attempt count, retry window and backoff reset), a pending one keeps its own; return each with the action taken
UPDATE deliveries d
SET status = 'pending',
    replay_generation = CASE WHEN t.status = 'failed' THEN d.replay_generation + 1
                             ELSE d.replay_generation END,
    attempt_count = CASE WHEN t.status = 'failed' THEN 0 ELSE d.attempt_count END,
    generation_started_at = CASE WHEN t.status = 'failed' THEN NULL
                                 ELSE d.generation_started_at END,
    last_backoff_seconds = CASE WHEN t.status = 'failed' THEN NULL
                                ELSE d.last_backoff_seconds END,
    skipped_at = CASE WHEN t.status = 'failed' THEN NULL ELSE d.skipped_at END,
    next_attempt_at = least(d.next_attempt_at, now()),
    updated_at = now()
FROM target t
WHERE d.id = t.id AND d.status = t.status
RETURNING d.id, CASE WHEN t.status = 'failed' THEN 'REPLAYED' ELSE 'EXPEDITED' END AS action,
          d.replay_generation, d.next_attempt_at

-- replay_delivery --
-- Give a failed delivery of an active config a new generation due now (attempt count and window reset), or make a pending one due now; wake the dispatchers; return the action taken
WITH config_now AS (
    -- Share-locked before the delivery (the order a deactivation locks them in), so a
    -- concurrent deactivation waits, then cancels what this made pending, or goes first.
    SELECT id
    FROM configs
    WHERE id = (SELECT config_id FROM deliveries WHERE id = %(id)s)
      AND active AND deleted_at IS NULL
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    FOR SHARE
),
target AS (
    SELECT id, status, config_id
    FROM deliveries
    WHERE id = %(id)s AND status IN ('failed', 'pending')
      -- one held (waiting for its key's turn, or by a pause or a circuit) is not made due:
      -- that would break the key's order, or change nothing
      AND NOT (status = 'pending' AND pending_is_held(config_id, next_attempt_at))
      AND config_id IN (SELECT id FROM config_now)
    FOR UPDATE
),
replayed AS (
    /* include replay_transition */
),
wake AS (
    SELECT notify_deliveries_due() FROM replayed
)
SELECT id AS delivery_id, action, replay_generation, next_attempt_at,
       (SELECT count(*) FROM wake) AS woken
FROM replayed

-- replay_blocker --
-- Return why a delivery the scope may see cannot be replayed: its status, whether its config is active and not deleted, and what holds it back if it is pending
SELECT d.status, c.active AND c.deleted_at IS NULL AS config_active,
       hold.held_by, hold.held_until, hold.held_behind
FROM deliveries d
JOIN configs c ON c.id = d.config_id
LEFT JOIN LATERAL delivery_hold(d.status, d.config_id, d.next_attempt_at, d.ordering_key,
                                d.sequence) hold ON true
WHERE d.id = %(id)s
  AND (%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)

-- lock_idempotency_key --
-- Serialise the requests that carry one idempotency key of one owner (a tenant, or the platform) until the end of the transaction
SELECT pg_advisory_xact_lock(%(namespace)s, hashtext(%(owner)s::text || ':' || %(key)s))

-- find_idempotency_record --
-- Return the fingerprint and result remembered for an owner's key, if it is younger than the time to live
SELECT request_fingerprint, result
FROM replay_requests
WHERE tenant_id = %(owner)s AND idempotency_key = %(key)s
  AND created_at > now() - make_interval(secs => %(ttl)s)

-- remember_idempotency_record --
-- Remember a request's result under its owner's key, taking over an expired record, and forget the owner's other expired ones
WITH forgotten AS (
    DELETE FROM replay_requests
    WHERE tenant_id = %(owner)s AND created_at <= now() - make_interval(secs => %(ttl)s)
      AND idempotency_key <> %(key)s
)
INSERT INTO replay_requests (tenant_id, idempotency_key, request_fingerprint, result)
VALUES (%(owner)s, %(key)s, %(fingerprint)s, %(result)s)
ON CONFLICT (tenant_id, idempotency_key) DO UPDATE
SET request_fingerprint = excluded.request_fingerprint,
    result = excluded.result,
    created_at = now()
WHERE replay_requests.created_at <= now() - make_interval(secs => %(ttl)s)
RETURNING idempotency_key

-- replay_listed_deliveries --
-- Replay the failed and expedite the pending deliveries among the given ids (a page a filter listed), but for pending ones something holds back; return each id with the action taken (null: skipped), its status, whether its config is active and what holds it
WITH page AS (
    SELECT d.id, d.config_id, d.status, hold.held_by, hold.held_until, hold.held_behind
    FROM deliveries d
    LEFT JOIN LATERAL delivery_hold(d.status, d.config_id, d.next_attempt_at, d.ordering_key,
                                    d.sequence) hold ON true
    WHERE d.id = ANY (%(ids)s::bigint[])
      AND (%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)
),
configs_now AS (
    -- Configs first, then deliveries: the order a deactivation locks them in.
    SELECT id
    FROM configs
    WHERE id IN (SELECT config_id FROM page) AND active AND deleted_at IS NULL
    ORDER BY id
    FOR SHARE
),
target AS (
    SELECT id, status
    FROM deliveries
    WHERE id IN (SELECT id FROM page) AND status IN ('failed', 'pending')
      AND NOT (status = 'pending' AND pending_is_held(config_id, next_attempt_at))
      AND config_id IN (SELECT id FROM configs_now)
    ORDER BY id
    FOR UPDATE
),
replayed AS (
    /* include replay_transition */
),
wake AS (
    SELECT notify_deliveries_due() FROM (SELECT 1 FROM replayed LIMIT 1) r
)
SELECT p.id, r.action, p.status, p.config_id IN (SELECT id FROM configs_now) AS config_active,
       p.held_by, p.held_until, p.held_behind, (SELECT count(*) FROM wake) AS woken
FROM page p
LEFT JOIN replayed r ON r.id = p.id
ORDER BY p.id DESC

-- lock_key_turns_of_deliveries --
-- Before replaying the given deliveries (of the scope), take what replaying them may move, in the one lock order: their configs (share, in id order), then the pending deliveries of their ordering keys, one statement after the other
--
-- A replayed delivery of an ordered key may become its key's head, and the key's turns are
-- then settled: the delivery that was due is made to wait. A claim holds that delivery and
-- then waits for its config's health row, which the replay's own trigger takes first: locked
-- here, before anything is changed, the replay waits for the claim to commit instead (and then
-- sees it in flight, so the replayed delivery waits its turn), and claims skip what it holds.
--
-- Only the scope's deliveries count: a replay naming another tenant's delivery (which then
-- finds nothing to replay) must not hold up that tenant's claims and changes meanwhile.
SELECT count(*) FROM (
    SELECT id FROM configs
    WHERE id IN (SELECT config_id FROM deliveries
                 WHERE id = ANY(%(ids)s::bigint[])
                   AND (%(scope_tenant)s::bigint IS NULL
                        OR tenant_id = %(scope_tenant)s::bigint))
    ORDER BY id
    FOR SHARE
) configs_locked;
SELECT count(*) FROM (
    SELECT w.id
    FROM (SELECT DISTINCT config_id, ordering_key FROM deliveries
          WHERE id = ANY(%(ids)s::bigint[]) AND sequence IS NOT NULL
            AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)) k
    JOIN deliveries w ON w.config_id = k.config_id AND w.ordering_key = k.ordering_key
    WHERE w.sequence IS NOT NULL AND w.status = 'pending'
    FOR UPDATE OF w
) deliveries_locked
