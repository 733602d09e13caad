-- create_migrations_table --
-- Create the record of applied migrations if it is not there yet
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- migration_applied --
-- Say whether the migration of this version is recorded as applied
SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = %(version)s)

-- record_migration --
-- Record a migration as applied (once, whoever records it first); return its version if this call recorded it
INSERT INTO schema_migrations (version, name) VALUES (%(version)s, %(name)s)
ON CONFLICT (version) DO NOTHING
RETURNING version

-- limit_lock_waits --
-- Make each lock the current transaction waits for give way after the timeout
SELECT set_config('lock_timeout', %(timeout)s, true)

-- autovacuum_in_the_way --
-- Whether an autovacuum runs in this database that PostgreSQL cancels for a lock waiter (any but one against wraparound), and a lock timeout 200 ms past the deadlock timeout, after which a waiter has it cancelled
SELECT EXISTS (SELECT 1 FROM pg_stat_activity
               WHERE backend_type = 'autovacuum worker' AND datname = current_database()
                 AND position('to prevent wraparound' IN coalesce(query, '')) = 0),
       (extract(epoch FROM current_setting('deadlock_timeout')::interval) * 1000)::bigint + 200
       || 'ms'

-- try_migration_lock --
-- Take the migration lock for this session if no other run holds it
SELECT pg_try_advisory_lock(7245101)

-- release_migration_lock --
-- Release the migration lock of this session
SELECT pg_advisory_unlock(7245101)

-- try_migration_lock_for_transaction --
-- Take the migration lock until the current transaction ends, if no other run holds it
SELECT pg_try_advisory_xact_lock(7245101)

-- index_build_under_way --
-- Whether another session of this database is building or rebuilding an index on the table of index `i` (included by the statements below), so that an invalid index there may be that build's own, under way; another role's build hides its table, so it counts as one on this table
EXISTS (SELECT 1 FROM pg_stat_progress_create_index AS build
        WHERE build.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND build.pid <> pg_backend_pid()
          AND (build.relid IS NULL OR build.relid = i.indrelid))

-- index_left_invalid --
-- Say whether the index of this name exists but is invalid (a concurrent build of it was interrupted), with no build under way on its table
SELECT EXISTS (SELECT 1 FROM pg_index AS i
               WHERE i.indexrelid = to_regclass(%(name)s) AND NOT i.indisvalid
                 AND NOT /* include index_build_under_way */)

-- invalid_indexes --
-- List the invalid indexes on the tables of the service's schema that its role owns, each with whether it is the leftover of an interrupted REINDEX CONCURRENTLY (its new `_ccnew` or old `_ccold` copy) or DROP INDEX CONCURRENTLY (no longer live), to drop, or an index to rebuild; and whether a build under way on its table leaves it alone
SELECT n.nspname AS schema, ix.relname AS name,
       (ix.relname ~ '_cc(new|old)[0-9]*$' OR NOT i.indislive) AS leftover,
       /* include index_build_under_way */ AS building
FROM pg_index AS i
JOIN pg_class AS ix ON ix.oid = i.indexrelid
JOIN pg_class AS tbl ON tbl.oid = i.indrelid
JOIN pg_namespace AS n ON n.oid = tbl.relnamespace
WHERE NOT i.indisvalid
  AND n.nspname = current_schema()
  AND pg_has_role(tbl.relowner, 'USAGE')
ORDER BY leftover DESC, ix.relname

-- drop_index_concurrently --
-- Drop an index without blocking its table's reads and writes (outside any transaction; {index} is the quoted name)
DROP INDEX CONCURRENTLY IF EXISTS {index}

-- reindex_concurrently --
-- Build an index again from its definition without blocking its table's reads and writes, and swap it in (outside any transaction; {index} is the quoted name)
REINDEX INDEX CONCURRENTLY {index}
