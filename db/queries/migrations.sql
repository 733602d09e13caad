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
-- Record a migration as applied (once, whoever records it first)
INSERT INTO schema_migrations (version, name) VALUES (%(version)s, %(name)s)
ON CONFLICT (version) DO NOTHING

-- limit_lock_waits --
-- Make each lock the current transaction waits for give way after the timeout
SELECT set_config('lock_timeout', %(timeout)s, true)

-- try_migration_lock --
-- Take the migration lock for this session if no other run holds it
SELECT pg_try_advisory_lock(7245101)

-- release_migration_lock --
-- Release the migration lock of this session
SELECT pg_advisory_unlock(7245101)

-- try_migration_lock_for_transaction --
-- Take the migration lock until the current transaction ends, if no other run holds it
SELECT pg_try_advisory_xact_lock(7245101)
