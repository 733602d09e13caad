-- insert_portal_session --
-- Store a new portal session of a live tenant by its token's digest, expiring after `expires_in` seconds; nothing when the tenant is gone
INSERT INTO portal_sessions (tenant_id, token_hash, capabilities, event_types, created_by,
                             expires_at)
SELECT t.id, %(token_hash)s, %(capabilities)s::text[], %(event_types)s::text[],
       %(created_by)s, now() + make_interval(secs => %(expires_in)s::float8)
FROM tenants t
WHERE t.id = %(tenant_id)s AND t.deleted_at IS NULL
RETURNING id, expires_at

-- revoke_portal_sessions --
-- Revoke every live (neither revoked nor expired) portal session of a tenant; return the sessions revoked
UPDATE portal_sessions SET revoked_at = now()
WHERE tenant_id = %(tenant_id)s AND revoked_at IS NULL AND expires_at > now()
RETURNING id

-- authenticate_portal_session --
-- Return the tenant, capabilities, event types and expiry of a live portal session (neither revoked nor expired, its tenant not deleted) by its token's digest
SELECT s.id, s.tenant_id, t.uid AS tenant_uid, s.capabilities, s.event_types, s.expires_at
FROM portal_sessions s
JOIN tenants t ON t.id = s.tenant_id
WHERE s.token_hash = %(token_hash)s AND s.revoked_at IS NULL AND s.expires_at > now()
  AND t.deleted_at IS NULL
