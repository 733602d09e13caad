-- tenant_columns --
-- A tenant as every statement returns it, from tenants as `t` (included by the statements below)
t.id, t.uid, t.name, t.metadata, t.created_at, t.updated_at, t.deleted_at, t.max_configs,
t.events_per_second, t.deliveries_per_second

-- insert_tenants --
-- Create tenants in the order given (identities in that order); return those created, none for a uid that is taken (by a tenant deleted or not)
INSERT INTO tenants AS t (uid, name, metadata, max_configs, events_per_second,
                          deliveries_per_second)
SELECT i.uid, i.name, i.metadata::jsonb, i.max_configs, i.events_per_second,
       i.deliveries_per_second
FROM unnest(%(uids)s::text[], %(names)s::text[], %(metadata)s::text[],
            %(max_configs)s::integer[], %(events_per_second)s::float8[],
            %(deliveries_per_second)s::float8[]) WITH ORDINALITY
    AS i (uid, name, metadata, max_configs, events_per_second, deliveries_per_second,
          position)
ORDER BY i.position
ON CONFLICT (uid) DO NOTHING
RETURNING /* include tenant_columns */

-- create_tenants_named --
-- Create the tenants of the given uids that do not exist yet, each named by its uid (publishing to a tenant that does not exist, where the settings allow it)
INSERT INTO tenants (uid, name)
SELECT uid, uid FROM unnest(%(uids)s::text[]) AS u (uid)
ORDER BY uid
ON CONFLICT (uid) DO NOTHING

-- get_tenant --
-- Return the tenant of a uid (deleted ones too) if the scope may see it
SELECT /* include tenant_columns */
FROM tenants t
WHERE t.uid = %(uid)s
  AND (%(scope_tenant)s::bigint IS NULL OR t.id = %(scope_tenant)s::bigint)

-- get_tenants_by_uid --
-- Return the tenants of the given uids (deleted ones too) that the scope may see
SELECT /* include tenant_columns */
FROM tenants t
WHERE t.uid = ANY (%(uids)s::text[])
  AND (%(scope_tenant)s::bigint IS NULL OR t.id = %(scope_tenant)s::bigint)

-- get_tenants_by_id --
-- Return the given tenants (deleted ones too) that the scope may see
SELECT /* include tenant_columns */
FROM tenants t
WHERE t.id = ANY (%(ids)s::bigint[])
  AND (%(scope_tenant)s::bigint IS NULL OR t.id = %(scope_tenant)s::bigint)

-- tenants_of_uids --
-- Return the id, uid and deletion time of each tenant among the given uids
SELECT id, uid, deleted_at FROM tenants WHERE uid = ANY (%(uids)s::text[])

-- update_tenant --
-- Change the given fields of a tenant that is not deleted (a limit given as -1 is cleared, null keeps it); return it
UPDATE tenants t
SET name = coalesce(%(name)s, t.name),
    metadata = coalesce(%(metadata)s::jsonb, t.metadata),
    max_configs = CASE WHEN %(max_configs)s::integer = -1 THEN NULL
                       ELSE coalesce(%(max_configs)s::integer, t.max_configs) END,
    events_per_second = CASE WHEN %(events_per_second)s::float8 = -1 THEN NULL
                             ELSE coalesce(%(events_per_second)s::float8, t.events_per_second)
                        END,
    deliveries_per_second = CASE WHEN %(deliveries_per_second)s::float8 = -1 THEN NULL
                                 ELSE coalesce(%(deliveries_per_second)s::float8,
                                               t.deliveries_per_second) END,
    updated_at = now()
WHERE t.uid = %(uid)s AND t.deleted_at IS NULL
RETURNING /* include tenant_columns */

-- lock_tenant --
-- Lock a tenant that is not deleted for a change of its configs (deletion, a limited config creation); return its id
SELECT id FROM tenants WHERE id = %(id)s AND deleted_at IS NULL FOR UPDATE

-- configs_of_tenant --
-- Return the ids of a tenant's configs that are not deleted, in id order
SELECT id FROM configs WHERE tenant_id = %(tenant_id)s AND deleted_at IS NULL ORDER BY id

-- mark_tenant_deleted --
-- Mark a tenant deleted; return it
UPDATE tenants t SET deleted_at = now(), updated_at = now()
WHERE t.id = %(id)s AND t.deleted_at IS NULL
RETURNING /* include tenant_columns */

-- stop_configs_of_tenant --
-- Deactivate the active configs of a deleted tenant (locked before, in the one lock order); return how many
UPDATE configs SET active = false, updated_at = now()
WHERE tenant_id = %(tenant_id)s AND active AND deleted_at IS NULL

-- cancel_pending_deliveries_of_tenant --
-- Cancel the pending deliveries of a deleted tenant's configs, saying why
UPDATE deliveries
SET status = 'cancelled', next_attempt_at = NULL, last_error = %(reason)s, updated_at = now()
WHERE config_id = ANY (%(config_ids)s::text[]) AND status = 'pending'

-- tenant_filter --
-- The conditions of a tenants filter on tenants as `t` (included by the statements below)
(%(scope_tenant)s::bigint IS NULL OR t.id = %(scope_tenant)s::bigint)
AND (%(include_deleted)s OR t.deleted_at IS NULL)
AND (%(uid)s::text IS NULL OR t.uid = %(uid)s::text)
AND (%(name_pattern)s::text IS NULL OR lower(t.name) LIKE %(name_pattern)s::text)
AND (%(created_after)s::timestamptz IS NULL OR t.created_at >= %(created_after)s::timestamptz)
AND (%(created_before)s::timestamptz IS NULL OR t.created_at < %(created_before)s::timestamptz)

-- list_tenants --
-- Page through the tenants a filter matches, newest first after a (created_at, id) cursor
SELECT /* include tenant_columns */
FROM tenants t
WHERE /* include tenant_filter */
  AND (%(cursor_time)s::timestamptz IS NULL
       OR (t.created_at, t.id) < (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY t.created_at DESC, t.id DESC
LIMIT %(limit)s

-- list_tenants_backwards --
-- Page back through the tenants a filter matches, oldest first from a (created_at, id) cursor
SELECT /* include tenant_columns */
FROM tenants t
WHERE /* include tenant_filter */
  AND (%(cursor_time)s::timestamptz IS NULL
       OR (t.created_at, t.id) > (%(cursor_time)s::timestamptz, %(cursor_id)s::bigint))
ORDER BY t.created_at, t.id
LIMIT %(limit)s

-- count_tenants --
-- Count the tenants a filter matches, stopping one past the bound
SELECT count(*) FROM (SELECT 1 FROM tenants t WHERE /* include tenant_filter */
                      LIMIT %(bound)s + 1) matched

-- tenant_stats --
-- For each given tenant: its deliveries by status (each count stopping at the bound), its queue depth (pending, same bound), how long its longest-waiting config that could be sent to now has waited, and its attempts and failed attempts of the last hour
--
-- Each count and the longest wait read the tenant's own rows through its own indexes
-- (`deliveries_tenant_status`, `config_health_of_tenant`), whatever the statistics say. Written
-- plainly (`d.status = 'pending'`, `h.next_due_at IS NOT NULL`), the conditions also match the
-- partial indexes of the claim (the pending deliveries, the ready set), and statistics taken
-- before a burst (a table analysed when nothing was due) make those look empty: the planner
-- then walked every pending delivery, or every ready config, of every tenant once per tenant
-- of the page (0.3–0.5 s for a page of 100 beside 22,000 due deliveries). A status taken from
-- a list, and a missing due time turned into `infinity`, are the same conditions that no
-- partial index's predicate can be proven from.
SELECT t.id AS tenant_id, n.pending, n.delivering, n.succeeded, n.failed, n.cancelled,
       (SELECT extract(epoch FROM now() - min(config_ready_at(h.next_due_at, h.circuit,
                                                              h.next_probe_at,
                                                              h.next_send_at)))::float8
        FROM config_health h
        WHERE h.tenant_id = t.id AND h.paused_at IS NULL AND h.circuit <> 'half_open'
          AND config_ready_at(coalesce(h.next_due_at, 'infinity'), h.circuit,
                              h.next_probe_at, h.next_send_at) <= now()
       ) AS oldest_due_age_seconds,
       coalesce(a.attempts, 0) AS attempts_last_hour,
       coalesce(a.attempts - a.succeeded, 0) AS failed_attempts_last_hour
FROM tenants t
CROSS JOIN LATERAL (
    SELECT max(c.counted) FILTER (WHERE s.status = 'pending') AS pending,
           max(c.counted) FILTER (WHERE s.status = 'delivering') AS delivering,
           max(c.counted) FILTER (WHERE s.status = 'succeeded') AS succeeded,
           max(c.counted) FILTER (WHERE s.status = 'failed') AS failed,
           max(c.counted) FILTER (WHERE s.status = 'cancelled') AS cancelled
    FROM unnest('{pending,delivering,succeeded,failed,cancelled}'::text[]) AS s (status)
    CROSS JOIN LATERAL (SELECT count(*) AS counted
                        FROM (SELECT 1 FROM deliveries d
                              WHERE d.tenant_id = t.id AND d.status = s.status
                              LIMIT %(bound)s) x) c
) n
LEFT JOIN LATERAL (
    SELECT sum(n.attempts)::bigint AS attempts, sum(n.succeeded)::bigint AS succeeded
    FROM config_attempt_counts n
    WHERE n.tenant_id = t.id AND n.period_start >= now() - interval '1 hour'
) a ON true
WHERE t.id = ANY (%(ids)s::bigint[])
