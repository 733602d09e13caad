-- delete_expired_deliveries --
-- Delete a bounded batch of deliveries in the given terminal states older than the age and their attempts (in one set-based delete by delivery id, not one cascade per delivery), but a failed delivery that holds its ordering key while its config exists; return their events (tenant and id), and the config and key of those that had a place in a key's order. The states are a constant array, so the planner proves the partial index of their age (succeeded, or failed and cancelled) applies.
--
-- A delivery that holds its key keeps it however old: deleted, the key's next delivery would
-- go out with nothing skipped and nobody told. An operator skips it or replays it; a deleted
-- config's holders go with the age like any other failure.
WITH doomed AS (
    SELECT d.id
    FROM deliveries d
    WHERE d.status = ANY (%(statuses)s::text[])
      AND d.updated_at < now() - make_interval(secs => %(age)s)
      AND NOT (d.blocks_key AND EXISTS (SELECT 1 FROM configs c
                                        WHERE c.id = d.config_id AND c.deleted_at IS NULL))
    ORDER BY d.updated_at
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
),
attempts AS (
    DELETE FROM delivery_attempts WHERE delivery_id = ANY (ARRAY(SELECT id FROM doomed))
)
DELETE FROM deliveries d
USING doomed
WHERE d.id = doomed.id AND d.status = ANY (%(statuses)s::text[])
RETURNING d.tenant_id, d.event_id, CASE WHEN d.sequence IS NOT NULL THEN d.config_id END AS config_id,
          CASE WHEN d.sequence IS NOT NULL THEN d.ordering_key END AS ordering_key

-- delete_forgotten_ordering_keys --
-- Forget the given ordering keys of configs that have no delivery left (retention deleted their last one): a key that comes again starts its sequence at 1
DELETE FROM ordering_keys k
USING unnest(%(config_ids)s::text[], %(keys)s::text[]) AS t (config_id, ordering_key)
WHERE k.config_id = t.config_id AND k.ordering_key = t.ordering_key
  AND NOT EXISTS (SELECT 1 FROM deliveries d
                  WHERE d.config_id = k.config_id AND d.ordering_key = k.ordering_key)

-- delete_orphan_events --
-- Delete the given events (tenant and id) once no delivery refers to them
DELETE FROM events e
USING unnest(%(tenant_ids)s::bigint[], %(ids)s::text[]) AS gone (tenant_id, id)
WHERE e.tenant_id = gone.tenant_id AND e.id = gone.id
  AND NOT EXISTS (SELECT 1 FROM deliveries d
                  WHERE d.event_id = e.id AND d.tenant_id = e.tenant_id)

-- delete_old_undelivered_events --
-- Delete a bounded batch of events older than the age that never had (or no longer have) deliveries
WITH doomed AS (
    SELECT e.tenant_id, e.id
    FROM events e
    WHERE e.created_at < now() - make_interval(secs => %(age)s)
      AND NOT EXISTS (SELECT 1 FROM deliveries d
                      WHERE d.event_id = e.id AND d.tenant_id = e.tenant_id)
    ORDER BY e.created_at
    LIMIT %(limit)s
)
DELETE FROM events e
USING doomed
WHERE e.tenant_id = doomed.tenant_id AND e.id = doomed.id
  AND NOT EXISTS (SELECT 1 FROM deliveries d
                  WHERE d.event_id = e.id AND d.tenant_id = e.tenant_id)

-- delete_expired_replay_requests --
-- Forget replay idempotency records older than their memory
DELETE FROM replay_requests
WHERE created_at < now() - make_interval(secs => %(age)s)

-- delete_expired_rejected_events --
-- Delete a bounded batch of quarantined broker messages older than the age, oldest first (ids grow with time, so the scan stops at the first one still kept)
WITH doomed AS (
    SELECT id
    FROM rejected_events
    WHERE created_at < now() - make_interval(secs => %(age)s)
    ORDER BY id
    LIMIT %(limit)s
)
DELETE FROM rejected_events r
USING doomed
WHERE r.id = doomed.id

-- try_retention_lock --
-- Take the retention lock for this session if no other worker holds it
SELECT pg_try_advisory_lock(7245102)

-- release_retention_lock --
-- Release the retention lock of this session
SELECT pg_advisory_unlock(7245102)

-- try_retention_lock_for_transaction --
-- Take the retention lock until the current transaction ends, if no other worker holds it
SELECT pg_try_advisory_xact_lock(7245102)

-- delete_expired_attempt_counts --
-- Delete a bounded batch of per-config attempt counts of periods older than the age
WITH doomed AS (
    SELECT config_id, period_start
    FROM config_attempt_counts
    WHERE period_start < now() - make_interval(secs => %(age)s)
    LIMIT %(limit)s
)
DELETE FROM config_attempt_counts t
USING doomed
WHERE t.config_id = doomed.config_id AND t.period_start = doomed.period_start
