-- insert_config --
-- Create a config and return it
INSERT INTO configs (id, name, endpoint, secret, event_types, active)
VALUES (coalesce(%(id)s, gen_random_uuid()::text), %(name)s, %(endpoint)s, %(secret)s,
        %(event_types)s, %(active)s)
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at

-- get_config --
-- Return one config that has not been deleted
SELECT id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
       previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at
FROM configs
WHERE id = %(id)s AND deleted_at IS NULL

-- list_configs --
-- Page through configs newest first, after a (created_at, id) cursor, optionally by active flag and health state
SELECT id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
       previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at
FROM configs
WHERE deleted_at IS NULL
  AND (%(active)s::boolean IS NULL OR active = %(active)s::boolean)
  AND (%(health)s::text IS NULL
       OR EXISTS (SELECT 1 FROM config_health h
                  WHERE h.config_id = configs.id AND config_health_state(h) = %(health)s::text))
  AND (%(after_created)s::timestamptz IS NULL
       OR (created_at, id) < (%(after_created)s::timestamptz, %(after_id)s::text))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s

-- update_config --
-- Change the given fields of a config that has not been deleted
UPDATE configs
SET endpoint = coalesce(%(endpoint)s, endpoint),
    event_types = coalesce(%(event_types)s, event_types),
    name = CASE WHEN %(set_name)s THEN %(name)s ELSE name END,
    updated_at = now()
WHERE id = %(id)s AND deleted_at IS NULL
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at

-- set_config_active --
-- Activate or deactivate a config that has not been deleted; say whether it was the other way before
WITH before AS (
    SELECT id, active FROM configs WHERE id = %(id)s AND deleted_at IS NULL FOR UPDATE
)
UPDATE configs c
SET active = %(active)s, updated_at = CASE WHEN c.active = %(active)s THEN c.updated_at ELSE now() END
FROM before
WHERE c.id = before.id
RETURNING c.id, c.name, c.endpoint, c.event_types, c.active, c.created_at, c.updated_at,
          c.deleted_at, previous_secrets_expire_at(c.previous_secrets) AS previous_secrets_expire_at,
          before.active <> %(active)s AS changed

-- delete_config --
-- Mark a config deleted and inactive; the row stays so its deliveries remain inspectable
UPDATE configs
SET deleted_at = now(), active = false, updated_at = now()
WHERE id = %(id)s AND deleted_at IS NULL
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at

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
RETURNING id, name, endpoint, event_types, active, created_at, updated_at, deleted_at,
          previous_secrets_expire_at(previous_secrets) AS previous_secrets_expire_at

-- cancel_pending_deliveries_of_config --
-- Cancel the pending deliveries of a config that was just deactivated or deleted
UPDATE deliveries
SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
WHERE config_id = %(id)s AND status = 'pending'
RETURNING id
