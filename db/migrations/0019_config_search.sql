-- Configs at platform scale: found by a piece of their name or endpoint, and matched to an
-- event's type through an index, whatever their number.
--
-- pg_trgm ships with PostgreSQL and is a trusted extension: the database's owner (the role
-- that runs migrations on managed services) may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What `search` matches: the name and the endpoint, one text, compared without case.
CREATE OR REPLACE FUNCTION config_search_text(name text, endpoint text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(coalesce(name, '') || ' ' || endpoint)
$$;

-- concurrently --
-- An event's subscribers, by index: one event to ten thousand configs, or a config subscribed
-- to a thousand types, reads the matching configs only.
CREATE INDEX CONCURRENTLY IF NOT EXISTS configs_subscribed ON configs USING gin (event_types)
    WHERE active AND deleted_at IS NULL;
-- A substring of the name or the endpoint, by trigrams.
CREATE INDEX CONCURRENTLY IF NOT EXISTS configs_search ON configs
    USING gin (config_search_text(name, endpoint) gin_trgm_ops) WHERE deleted_at IS NULL;
-- Inactive configs, which are few where the API lists them by that flag.
CREATE INDEX CONCURRENTLY IF NOT EXISTS configs_inactive ON configs (created_at DESC, id DESC)
    WHERE NOT active AND deleted_at IS NULL;
