-- insert_token --
-- Store a new API token by its digest, for the whole platform or one live tenant, expiring after `expires_in` seconds (null: never); nothing when the tenant is gone
INSERT INTO api_tokens (name, role, token_hash, expires_at, tenant_id)
SELECT %(name)s, %(role)s, %(token_hash)s,
       now() + make_interval(secs => %(expires_in)s::float8), %(tenant_id)s::bigint
WHERE %(tenant_id)s::bigint IS NULL
   OR EXISTS (SELECT 1 FROM tenants WHERE id = %(tenant_id)s::bigint AND deleted_at IS NULL)
RETURNING id, name, role, created_at, last_used_at, revoked_at, expires_at,
          (SELECT uid FROM tenants t WHERE t.id = api_tokens.tenant_id) AS tenant_uid

-- list_tokens --
-- Return the live tokens (never their digests), each with its tenant's uid (null: platform-wide), oldest first
SELECT k.id, k.name, k.role, k.created_at, k.last_used_at, k.revoked_at, k.expires_at,
       t.uid AS tenant_uid
FROM api_tokens k
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE k.revoked_at IS NULL
ORDER BY k.created_at, k.id

-- revoke_token --
-- Revoke the live token called `name`; return its record
UPDATE api_tokens SET revoked_at = now()
WHERE name = %(name)s AND revoked_at IS NULL
RETURNING id, name, role, created_at, last_used_at, revoked_at, expires_at,
          (SELECT uid FROM tenants t WHERE t.id = api_tokens.tenant_id) AS tenant_uid

-- authenticate_token --
-- Return the name, role and tenant (null: platform-wide) of a live token (neither revoked nor expired, its tenant not deleted) by its digest, noting when it was last used (at most once a minute)
WITH token AS (
    SELECT k.id, k.name, k.role, k.last_used_at, k.tenant_id, t.uid AS tenant_uid
    FROM api_tokens k
    LEFT JOIN tenants t ON t.id = k.tenant_id
    WHERE k.token_hash = %(token_hash)s AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now())
      AND (k.tenant_id IS NULL OR t.deleted_at IS NULL)
),
touched AS (
    UPDATE api_tokens SET last_used_at = now()
    FROM token
    WHERE api_tokens.id = token.id
      AND (token.last_used_at IS NULL OR token.last_used_at < now() - interval '1 minute')
)
SELECT name, role, tenant_id, tenant_uid FROM token
