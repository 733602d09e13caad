-- The durable delivery model: configs, events, deliveries, attempts, replay idempotency
-- records, rejected broker events and API tokens.

-- Configs. A database of the former model already has this table with (id, endpoint,
-- secret, event_types, active, name, created_at, updated_at): it is kept in place, its
-- columns normalised to the types below, and the new columns added.
CREATE TABLE IF NOT EXISTS configs (
    id text PRIMARY KEY DEFAULT gen_random_uuid()::text,
    name text,
    endpoint text NOT NULL,
    secret text NOT NULL,
    event_types text[] NOT NULL,
    active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE configs ADD COLUMN IF NOT EXISTS name text;
ALTER TABLE configs ADD COLUMN IF NOT EXISTS active boolean NOT NULL DEFAULT true;
ALTER TABLE configs ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE configs ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE configs
    ALTER COLUMN id TYPE text USING id::text,
    ALTER COLUMN id SET DEFAULT gen_random_uuid()::text,
    ALTER COLUMN endpoint TYPE text,
    ALTER COLUMN secret TYPE text,
    ALTER COLUMN event_types TYPE text[] USING coalesce(event_types::text[], '{}'),
    ALTER COLUMN event_types SET NOT NULL,
    ALTER COLUMN active SET DEFAULT true,
    ALTER COLUMN created_at TYPE timestamptz,
    ALTER COLUMN updated_at TYPE timestamptz;
UPDATE configs SET active = false WHERE active IS NULL;
ALTER TABLE configs ALTER COLUMN active SET NOT NULL;
-- The previous secret keeps signing until it expires (secret rotation grace).
ALTER TABLE configs ADD COLUMN previous_secret text;
ALTER TABLE configs ADD COLUMN previous_secret_expires_at timestamptz;
-- Deleted configs stay as rows so their deliveries remain inspectable.
ALTER TABLE configs ADD COLUMN deleted_at timestamptz;
CREATE INDEX configs_listing ON configs (created_at DESC, id DESC) WHERE deleted_at IS NULL;

-- Events: the payload is stored once per event, however many deliveries it fans out to.
CREATE TABLE events (
    id text PRIMARY KEY,
    type text NOT NULL,
    payload json NOT NULL,
    occurred_at timestamptz NOT NULL,
    source text NOT NULL CHECK (source IN ('api', 'kafka', 'backfill')),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_created ON events (created_at);

-- Deliveries: one per (event, config); the unit of retry, inspection and replay.
CREATE TABLE deliveries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL REFERENCES events (id),
    config_id text NOT NULL REFERENCES configs (id),
    event_type text NOT NULL,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'cancelled')),
    attempt_count integer NOT NULL DEFAULT 0,
    replay_generation integer NOT NULL DEFAULT 0,
    generation_started_at timestamptz,
    next_attempt_at timestamptz,
    last_status_code integer,
    last_error text,
    claimed_at timestamptz,
    claimed_by text,
    claim_token uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT deliveries_event_config_key UNIQUE (event_id, config_id),
    CONSTRAINT deliveries_pending_has_due CHECK (status <> 'pending' OR next_attempt_at IS NOT NULL),
    CONSTRAINT deliveries_delivering_has_claim
        CHECK (status <> 'delivering' OR (claimed_at IS NOT NULL AND claim_token IS NOT NULL))
);
-- The claim: due pending deliveries, oldest due first.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
-- Stale-claim recovery.
CREATE INDEX deliveries_claimed ON deliveries (claimed_at) WHERE status = 'delivering';
-- Listings, newest first, by config, status and event type.
CREATE INDEX deliveries_by_config ON deliveries (config_id, id);
CREATE INDEX deliveries_by_status ON deliveries (status, id);
CREATE INDEX deliveries_by_event_type ON deliveries (event_type, id);
CREATE INDEX deliveries_created ON deliveries USING brin (created_at);
-- Retention: terminal deliveries by age.
CREATE INDEX deliveries_succeeded_age ON deliveries (updated_at) WHERE status = 'succeeded';
CREATE INDEX deliveries_finished_age ON deliveries (updated_at)
    WHERE status IN ('failed', 'cancelled');

-- Attempts: append-only, one per HTTP call; deleted with their delivery.
CREATE TABLE delivery_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    attempt_number integer NOT NULL,
    replay_generation integer NOT NULL,
    endpoint text NOT NULL,
    outcome text NOT NULL
        CHECK (outcome IN ('success', 'http_error', 'timeout', 'network_error', 'blocked')),
    status_code integer NOT NULL DEFAULT 0,
    duration_ms integer NOT NULL,
    response_excerpt text,
    error text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts (delivery_id, id);

-- Replay idempotency: the result of each replay request, remembered for 24 hours.
CREATE TABLE replay_requests (
    idempotency_key text PRIMARY KEY,
    request_fingerprint text NOT NULL,
    result jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replay_requests_created ON replay_requests (created_at);

-- Broker messages that could not become events, kept with their raw bytes.
CREATE TABLE rejected_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic text NOT NULL,
    partition integer NOT NULL,
    "offset" bigint NOT NULL,
    reason text NOT NULL,
    raw bytea,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rejected_events_position_key UNIQUE (topic, partition, "offset")
);

-- API bearer tokens, stored as SHA-256 digests.
CREATE TABLE api_tokens (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    role text NOT NULL CHECK (role IN ('viewer', 'operator')),
    token_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
