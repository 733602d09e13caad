-- Vacuum and analyse deliveries after 2% / 1% of their rows changed rather than 20% / 10%:
-- on ten million rows the defaults let two million dead rows pile up between vacuums, and
-- `stats` estimates (table statistics) drift by up to a million before they are refreshed.
-- Attempts are append-only: vacuum them after 5% new rows, which keeps index-only scans.
ALTER TABLE deliveries SET (autovacuum_vacuum_scale_factor = 0.02,
                            autovacuum_analyze_scale_factor = 0.01);
ALTER TABLE delivery_attempts SET (autovacuum_vacuum_scale_factor = 0.05,
                                   autovacuum_vacuum_insert_scale_factor = 0.05);
-- concurrently --
-- Listings walk deliveries newest first by (created_at, id): one index per filter, each ending
-- in (created_at, id), serves a page, a deep page and an old time window alike by reading
-- only the rows it returns. The former (filter, id) indexes and the BRIN on created_at go.
--
-- Built CONCURRENTLY, so dispatch and ingest keep writing during the build (minutes on tens
-- of millions of rows). Each index is dropped before it is built: a build interrupted before
-- this migration was recorded leaves an invalid index behind, and the next run starts over.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_created;
CREATE INDEX CONCURRENTLY deliveries_by_created ON deliveries (created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_config_created;
CREATE INDEX CONCURRENTLY deliveries_by_config_created ON deliveries (config_id, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_status_created;
CREATE INDEX CONCURRENTLY deliveries_by_status_created ON deliveries (status, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_event_type_created;
CREATE INDEX CONCURRENTLY deliveries_by_event_type_created
    ON deliveries (event_type, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_config;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_status;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_by_event_type;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_created;
