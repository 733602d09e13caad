-- The catalog of event types: platform-wide (every tenant sees the same types), each with a
-- description, examples, a group, and a JSON Schema that payloads of the type must satisfy.
-- A schema change is a new version; every version stays readable, and each event says which
-- version it was checked against.
CREATE TABLE IF NOT EXISTS event_types (
    name text PRIMARY KEY,
    description text NOT NULL DEFAULT '',
    group_name text,
    examples jsonb NOT NULL DEFAULT '[]',
    schema_version integer NOT NULL DEFAULT 0,  -- the current version; 0: no schema
    deprecated_at timestamptz,
    deprecated_reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS event_type_schemas (
    name text NOT NULL REFERENCES event_types (name),
    version integer NOT NULL CHECK (version > 0),
    schema jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

-- The version of its type's schema an event's payload was checked against (null: none).
ALTER TABLE events ADD COLUMN IF NOT EXISTS schema_version integer;

-- The subscription patterns an event type matches: itself, each of its dotted prefixes
-- followed by `.*` (`invoice.*` matches `invoice.paid` and `invoice.paid.late`), and `*`.
-- A config subscribed to any of them gets the event: the configs' subscriptions index finds
-- them (`event_types && subscription_patterns(type)`), never a scan of the configs.
CREATE OR REPLACE FUNCTION subscription_patterns(event_type text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[event_type, '*'] || coalesce(array_agg(
        array_to_string((string_to_array(event_type, '.'))[1:n], '.') || '.*'),
        '{}')
    FROM generate_series(1, array_length(string_to_array(event_type, '.'), 1) - 1) AS n
$$;

-- The active configs of the given tenants subscribed to any of the given patterns (an event
-- batch's types and the patterns that match them), share-locked, so that a concurrent
-- deactivation either waits for the ingest or commits first and the ingest skips the config.
-- Read through the subscriptions index whatever the statistics say: with patterns beside the
-- types, each element the statistics do not know counts as a share of every config, and a
-- few of them made the planner read every config instead (a PL/pgSQL function is planned
-- once per session, here with sequential scans off, as the claim's walk is).
CREATE OR REPLACE FUNCTION subscribers(tenant_ids bigint[], patterns text[])
RETURNS TABLE (id text, tenant_id bigint, event_types text[])
LANGUAGE plpgsql VOLATILE ROWS 10
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id, c.tenant_id, c.event_types
    FROM configs c
    WHERE c.active AND c.deleted_at IS NULL
      AND c.tenant_id = ANY (tenant_ids)
      AND c.event_types && patterns
    FOR SHARE OF c;
END
$$;

-- concurrently --
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_types_listing ON event_types (group_name, name);
