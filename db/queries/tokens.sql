-- insert_token --
-- Store a new API token by its digest, expiring after `expires_in` seconds (null: never)
INSERT INTO api_tokens (name, role, token_hash, expires_at)
VALUES (%(name)s, %(role)s, %(token_hash)s,
        now() + make_interval(secs => %(expires_in)s::float8))
RETURNING id, name, role, created_at, last_used_at, revoked_at, expires_at

-- list_tokens --
-- Return the live tokens (never their digests), oldest first
SELECT id, name, role, created_at, last_used_at, revoked_at, expires_at
FROM api_tokens
WHERE revoked_at IS NULL
ORDER BY created_at, id

-- revoke_token --
-- Revoke the live token called `name`
UPDATE api_tokens SET revoked_at = now()
WHERE name = %(name)s AND revoked_at IS NULL
RETURNING id

-- authenticate_token --
-- Return the name and role of a live token (neither revoked nor expired) by its digest, noting when it was last used (at most once a minute)
WITH token AS (
    SELECT id, name, role, last_used_at
    FROM api_tokens
    WHERE token_hash = %(token_hash)s AND revoked_at IS NULL
      AND (expires_at IS NULL OR expires_at > now())
),
touched AS (
    UPDATE api_tokens SET last_used_at = now()
    FROM token
    WHERE api_tokens.id = token.id
      AND (token.last_used_at IS NULL OR token.last_used_at < now() - interval '1 minute')
)
SELECT name, role FROM token
