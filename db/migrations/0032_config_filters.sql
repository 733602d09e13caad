-- A config's filter on the events it receives (docs/filters.md): a match on the payload,
-- checked by the service when the config is saved, kept as the JSON text it was given (its
-- fields in the caller's order). Null: every event of its types. Adding a nullable column
-- only touches the catalog; waiting at most 400 ms for the table lock (the migration gives
-- way and is tried again) keeps ingestion and claims from waiting behind it for long.
SET LOCAL lock_timeout = '400ms';

ALTER TABLE configs ADD COLUMN IF NOT EXISTS filter json;

-- How many events each config's filter kept from it (no delivery was created), counted by the
-- ingest that decided so, in its transaction: an event stored again (a redelivered message)
-- counts once. Each config's count is spread over a few rows (by the ingesting connection), so
-- that ingests on several connections do not wait for one another's commit on one row; a
-- reader adds them up.
CREATE TABLE IF NOT EXISTS config_filter_counts (
    config_id text NOT NULL,
    slot smallint NOT NULL,
    tenant_id bigint NOT NULL,
    filtered_out bigint NOT NULL,
    last_filtered_out_at timestamptz NOT NULL,
    PRIMARY KEY (config_id, slot)
);

-- The active filtered configs of the given tenants subscribed to any of the given patterns
-- (as subscribers(), migration 0030, among the configs with a filter only, through their own
-- index: a platform where no config has a filter pays one probe of an empty index), with the
-- filter's text, share-locked as the ingest's own look-up locks them, before it: the filters
-- decided on are those the ingest then sees.
CREATE OR REPLACE FUNCTION filtered_subscribers(tenant_ids bigint[], patterns text[])
RETURNS TABLE (id text, tenant_id bigint, event_types text[], filter text)
LANGUAGE plpgsql VOLATILE ROWS 10
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.id, c.tenant_id, c.event_types, c.filter::text
    FROM configs c
    WHERE c.filter IS NOT NULL AND c.active AND c.deleted_at IS NULL
      AND c.tenant_id = ANY (tenant_ids)
      AND c.event_types && patterns
    FOR SHARE OF c;
END
$$;

-- concurrently --
CREATE INDEX CONCURRENTLY IF NOT EXISTS configs_filtered_subscriptions
    ON configs USING gin (tenant_id, event_types)
    WHERE filter IS NOT NULL AND active AND deleted_at IS NULL;
