-- insert_configs --
-- Create configs of live tenants (share-locked, in id order, so a deletion of one either waits for this or commits first and this creates none of its configs) and return them; each row's subscriptions come as a JSON array
WITH tenant AS (
    SELECT id FROM tenants
    WHERE id = ANY (%(tenant_ids)s::bigint[]) AND deleted_at IS NULL
    ORDER BY id
    FOR KEY SHARE
)
INSERT INTO configs (id, name, endpoint, secret, event_types, active, ordering,
                     block_on_failure, tenant_id, filter)
SELECT i.id, i.name, i.endpoint, i.secret,
       ARRAY(SELECT jsonb_array_elements_text(i.event_types::jsonb)), i.active, i.ordering,
       i.block_on_failure, tenant.id, i.filter::json
FROM unnest(%(ids)s::text[], %(names)s::text[], %(endpoints)s::text[], %(secrets)s::text[],
            %(event_types)s::text[], %(actives)s::boolean[], %(orderings)s::text[],
            %(blocks_on_failure)s::boolean[], %(tenant_ids)s::bigint[], %(filters)s::text[])
    WITH ORDINALITY
    AS i (id, name, endpoint, secret, event_types, active, ordering, block_on_failure,
          tenant_id, filter, position)
JOIN tenant ON tenant.id = i.tenant_id
ORDER BY i.position
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at,
          ordering, block_on_failure, tenant_id, filter

-- limited_tenants --
-- Return the ids of the given tenants that limit their number of configs
SELECT id FROM tenants WHERE id = ANY (%(tenant_ids)s::bigint[]) AND max_configs IS NOT NULL

-- config_room --
-- Lock a tenant that limits its configs (so that concurrent creations count one after the other) and say whether it has room for `adding` more; nothing when it has no limit
SELECT c.configs + %(adding)s <= t.max_configs AS room, c.configs, t.max_configs
FROM tenants t
CROSS JOIN LATERAL (SELECT count(*) AS configs FROM configs c
                    WHERE c.tenant_id = t.id AND c.deleted_at IS NULL) c
WHERE t.id = %(tenant_id)s AND t.max_configs IS NOT NULL
FOR NO KEY UPDATE OF t

-- get_config --
-- Return one config that has not been deleted, if the scope may see it
SELECT id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
       previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at,
       ordering, block_on_failure, tenant_id, filter
FROM configs c
WHERE c.id = %(id)s AND c.deleted_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)

-- get_configs --
-- Return the given configs that have not been deleted and the scope may see
SELECT /* include config_columns */
FROM configs c
WHERE c.id = ANY (%(ids)s::text[]) AND c.deleted_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)

-- config_owner --
-- Whose configs a statement may see, on configs as `c`: the scope's tenant's (null: the platform's) and, when a filter names one, that tenant's (included by the statements below)
(%(scope_tenant)s::bigint IS NULL OR c.tenant_id = %(scope_tenant)s::bigint)
AND (%(tenant)s::bigint IS NULL OR c.tenant_id = %(tenant)s::bigint)

-- config_filter --
-- The conditions of a configs filter on configs as `c` (included by the statements below): its owner, active flag, health state, a piece of the name or endpoint (or the exact id); psycopg2 inlines the values, so the planner drops the unused conditions and picks the matching index
c.deleted_at IS NULL
AND /* include config_owner */
AND (%(active)s::boolean IS NULL OR c.active = %(active)s::boolean)
AND (%(health)s::text IS NULL
     OR (SELECT config_health_state(h) FROM config_health h WHERE h.config_id = c.id)
        = %(health)s::text)
AND (%(search)s::text IS NULL
     OR config_search_text(c.name, c.endpoint) LIKE %(pattern)s::text
     OR c.id = %(search)s::text)

-- config_matches --
-- Every config a filter matches, from the filter's own index: the held configs' health index when it asks for a held state (`by_health`: paused, open, half_open), else the configs' (a piece of a name by trigrams, inactive ones); included by the statements below
SELECT c.*
FROM configs c
WHERE %(by_health)s::text IS NULL AND /* include config_filter */
UNION ALL
SELECT c.*
FROM config_health h
JOIN configs c ON c.id = h.config_id
WHERE %(by_health)s::text IS NOT NULL
  AND CASE %(by_health)s::text WHEN 'paused' THEN h.paused_at IS NOT NULL
           ELSE h.paused_at IS NULL AND h.circuit = %(by_health)s::text END
  AND /* include config_filter */

-- config_columns --
-- A config as the listings show it, from configs as `c` (included by the list statements below)
c.id, c.name, c.endpoint, c.event_types, c.active, c.created_at, c.updated_at, c.deleted_at,
previous_secrets_expire_at(c.previous_secrets) AS previous_secrets_expire_at,
c.ordering, c.block_on_failure, c.tenant_id, c.filter

-- list_configs_walk --
-- Page through the configs a filter matches, newest first after a (created_at, id) cursor, among the `walk` configs next to the cursor only: the whole page when matches are common, cheap at any number of configs
SELECT /* include config_columns */
FROM (SELECT * FROM configs c
      WHERE c.deleted_at IS NULL AND /* include config_owner */
        AND (%(cursor_time)s::timestamptz IS NULL
             OR (c.created_at, c.id) < (%(cursor_time)s::timestamptz, %(cursor_id)s::text))
      ORDER BY c.created_at DESC, c.id DESC
      LIMIT %(walk)s) c
WHERE /* include config_filter */
ORDER BY c.created_at DESC, c.id DESC
LIMIT %(limit)s

-- list_configs_walk_backwards --
-- Page back through the configs a filter matches, oldest first from a (created_at, id) cursor, among the `walk` configs next to the cursor only
SELECT /* include config_columns */
FROM (SELECT * FROM configs c
      WHERE c.deleted_at IS NULL AND /* include config_owner */
        AND (%(cursor_time)s::timestamptz IS NULL
             OR (c.created_at, c.id) > (%(cursor_time)s::timestamptz, %(cursor_id)s::text))
      ORDER BY c.created_at, c.id
      LIMIT %(walk)s) c
WHERE /* include config_filter */
ORDER BY c.created_at, c.id
LIMIT %(limit)s

-- list_configs_matched --
-- Page through the configs a filter matches, newest first after a (created_at, id) cursor, from the matches found through the filter's own index and then ordered: cheap when matches are few
WITH matched AS MATERIALIZED (/* include config_matches */)
SELECT /* include config_columns */
FROM matched c
WHERE %(cursor_time)s::timestamptz IS NULL
   OR (c.created_at, c.id) < (%(cursor_time)s::timestamptz, %(cursor_id)s::text)
ORDER BY c.created_at DESC, c.id DESC
LIMIT %(limit)s

-- list_configs_matched_backwards --
-- Page back through the configs a filter matches, oldest first from a (created_at, id) cursor, from the matches found through the filter's own index
WITH matched AS MATERIALIZED (/* include config_matches */)
SELECT /* include config_columns */
FROM matched c
WHERE %(cursor_time)s::timestamptz IS NULL
   OR (c.created_at, c.id) > (%(cursor_time)s::timestamptz, %(cursor_id)s::text)
ORDER BY c.created_at, c.id
LIMIT %(limit)s

-- count_configs --
-- Count the configs a filter matches, stopping one past the bound so the cost stays bounded
SELECT count(*) AS configs
FROM (/* include config_matches */ LIMIT %(bound)s + 1) matched

-- estimate_configs --
-- Return the planner's estimate of the configs a filter matches (nothing is counted)
EXPLAIN (FORMAT JSON) /* include config_matches */

-- update_config --
-- Change the given fields of a config that has not been deleted
UPDATE configs
SET endpoint = coalesce(%(endpoint)s, endpoint),
    event_types = coalesce(%(event_types)s, event_types),
    ordering = coalesce(%(ordering)s, ordering),
    block_on_failure = coalesce(%(block_on_failure)s, block_on_failure),
    name = CASE WHEN %(set_name)s THEN %(name)s ELSE name END,
    filter = CASE WHEN %(set_filter)s THEN %(filter)s::json ELSE filter END,
    updated_at = now()
WHERE id = %(id)s AND deleted_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at,
          ordering, block_on_failure, tenant_id, filter

-- set_config_active --
-- Activate or deactivate a config that has not been deleted; say whether it was the other way before
WITH before AS (
    SELECT id, active FROM configs
    WHERE id = %(id)s AND deleted_at IS NULL
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    FOR UPDATE
)
UPDATE configs c
SET active = %(active)s, updated_at = CASE WHEN c.active = %(active)s THEN c.updated_at ELSE now() END
FROM before
WHERE c.id = before.id
RETURNING c.id, c.name, c.endpoint, c.event_types, c.active, c.created_at, c.updated_at,
          c.deleted_at, previous_secrets_expire_at(c.previous_secrets) AS previous_secrets_expire_at,
          c.ordering, c.block_on_failure, c.tenant_id, c.filter,
          before.active <> %(active)s AS changed

-- delete_config --
-- Mark a config deleted and inactive; the row stays so its deliveries remain inspectable
UPDATE configs
SET deleted_at = now(), active = false, updated_at = now()
WHERE id = %(id)s AND deleted_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at,
          ordering, block_on_failure, tenant_id, filter

-- rotate_config_secret --
-- Install a new secret; with a grace, the current one joins the unexpired previous secrets (newest first, the `keep` newest kept), each signing until its own grace ends; without one, drop them all
UPDATE configs
SET previous_secrets = CASE WHEN %(grace_seconds)s > 0 THEN (
        SELECT coalesce(jsonb_agg(kept.entry ORDER BY kept.position), '[]')
        FROM (
            SELECT entry, position
            FROM jsonb_array_elements(
                     jsonb_build_array(jsonb_build_object(
                         'secret', secret,
                         'expires_at', now() + make_interval(secs => %(grace_seconds)s)))
                     || previous_secrets
                 ) WITH ORDINALITY AS candidate (entry, position)
            WHERE (entry ->> 'expires_at')::timestamptz > now() AND entry ->> 'secret' <> %(secret)s
            ORDER BY position
            LIMIT %(keep)s
        ) AS kept
    ) ELSE '[]' END,
    secret = %(secret)s,
    updated_at = now()
WHERE id = %(id)s AND deleted_at IS NULL
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at,
          ordering, block_on_failure, tenant_id, filter

-- cancel_pending_deliveries_of_config --
-- Cancel the pending deliveries of a config that was just deactivated or deleted
UPDATE deliveries
SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
WHERE config_id = %(id)s AND status = 'pending'
RETURNING id

-- lock_for_config_change --
-- Take, in the one lock order (configs, deliveries, health rows, key rows), the locks a change of configs (of the scope) that moves their deliveries needs: the rows of the configs (`configs`, in id order), the pending deliveries of those whose deliveries it moves (`pending_of`), then the configs' health rows (in id order), one statement after the other
--
-- Claims lock pending deliveries and then health rows; records and ingests lock configs, then
-- deliveries, then health rows, then key rows; updating a config also updates its health row
-- (its version). So a transaction that deactivates or deletes a config (cancelling its pending
-- deliveries) or changes its ordering (numbering them and settling their turns) must hold the
-- config before the deliveries, and the deliveries before its health row, or it deadlocks with
-- a claim that holds a delivery and waits for the health row.
--
-- Only the scope's rows are locked: a call naming another tenant's config (which then finds
-- nothing to change) must not hold up that tenant's claims, ingests and changes meanwhile.
SELECT count(*) FROM (
    SELECT id FROM configs
    WHERE id = ANY(%(configs)s::text[])
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    ORDER BY id FOR UPDATE
) configs_locked;
SELECT count(*) FROM (
    SELECT id FROM deliveries
    WHERE config_id = ANY(%(pending_of)s::text[]) AND status = 'pending'
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    FOR UPDATE
) deliveries_locked;
SELECT count(*) FROM (
    SELECT config_id FROM config_health
    WHERE config_id = ANY(%(configs)s::text[])
      AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
    ORDER BY config_id
    FOR UPDATE
) health_locked

-- configs_rows_analysed --
-- Return how many configs PostgreSQL's statistics knew of when it last analysed the table (-1: never analysed)
SELECT reltuples::float8 FROM pg_class WHERE oid = 'configs'::regclass

-- analyse_configs --
-- Refresh the statistics of configs and their health rows, by which the planner chooses the indexes of the subscriber look-up and the claim
ANALYZE configs, config_health

-- config_filter_counts --
-- Return how many events each of the given configs' filters rejected, and when one last did, for the configs of the scope that have rejected any
SELECT config_id, sum(filtered_out) AS filtered_out,
       max(last_filtered_out_at) AS last_filtered_out_at
FROM config_filter_counts
WHERE config_id = ANY (%(ids)s::text[])
  AND (%(scope_tenant)s::bigint IS NULL OR tenant_id = %(scope_tenant)s::bigint)
GROUP BY config_id
