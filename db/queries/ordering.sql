-- skip_delivery --
-- Let an ordered key go on past its failed delivery that holds it (the delivery stays failed and replayable); return it, or nothing when it holds no key
UPDATE deliveries
SET skipped_at = now(), updated_at = now()
WHERE id = %(id)s AND status = 'failed' AND blocks_key
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
RETURNING id, ordering_key, sequence

-- blocked_keys --
-- Page through a config's keys held by a failed delivery, one row per key by key after a cursor: each with the earliest delivery that holds it, since when, and how many deliveries wait behind it (counted up to a bound)
--
-- A key may have more than one holder (an earlier failure replayed and failed again behind a
-- later one): it is listed once, with the holder that comes first in its order, which is the
-- one that must go (replayed and succeeded, or skipped) before anything of the key is sent.
SELECT DISTINCT ON (d.ordering_key)
       d.ordering_key, d.id AS delivery_id, d.sequence, d.updated_at AS since,
       d.last_status_code, d.last_error,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries w
                              WHERE w.config_id = d.config_id
                                AND w.ordering_key = d.ordering_key
                                AND w.sequence IS NOT NULL AND w.status = 'pending'
                              LIMIT %(waiting_bound)s) w) AS waiting
FROM deliveries d
WHERE d.config_id = %(config_id)s AND d.blocks_key
  AND (%(scope_tenant)s::bigint IS NULL OR d.tenant_id = %(scope_tenant)s::bigint)
  AND (%(after)s::text IS NULL OR d.ordering_key > %(after)s::text)
ORDER BY d.ordering_key, d.sequence
LIMIT %(limit)s

-- count_blocked_keys --
-- Count the keys held by a failed delivery now: distinct keys, of active configs ordered per key
SELECT count(*) AS blocked
FROM (SELECT DISTINCT d.config_id, d.ordering_key
      FROM deliveries d
      JOIN configs c ON c.id = d.config_id
      WHERE d.blocks_key AND c.ordering = 'per_key' AND c.active AND c.deleted_at IS NULL
     ) held

-- skip_blocker --
-- Return why a delivery the scope may see cannot be skipped: its status and whether it has an ordered key
SELECT status, sequence IS NOT NULL AS ordered FROM deliveries
WHERE id = %(id)s
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
