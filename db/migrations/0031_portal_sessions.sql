-- Portal sessions: short-lived bearer tokens a platform mints for one tenant's self-service
-- page. Each acts as a token of its tenant, limited to its capabilities and, when it names
-- any, to the event types its endpoints may subscribe to. Stored only as a digest; revoked
-- one tenant at a time; a deleted tenant's sessions stop working with it.
CREATE TABLE IF NOT EXISTS portal_sessions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id bigint NOT NULL REFERENCES tenants (id),
    token_hash text NOT NULL UNIQUE,
    capabilities text[] NOT NULL,
    event_types text[],  -- null: every type the tenant may subscribe to
    created_by text,  -- the name of the platform token that minted it
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    CHECK (expires_at > created_at)
);

-- Revoking a tenant's sessions reads its live ones only.
CREATE INDEX IF NOT EXISTS portal_sessions_live_of_tenant
    ON portal_sessions (tenant_id) WHERE revoked_at IS NULL;
