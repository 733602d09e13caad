-- Endpoint health: one row per config that the claim statement reads and updates in the
-- claim's own transaction, and that recording an attempt updates in the record's transaction.
-- It holds the operator's pause, the circuit breaker shared by all workers, the count of the
-- config's attempts in flight (across every worker), the per-config cap and rate limit, and
-- the bookkeeping that stops the retry window's clock while deliveries are held.
--
-- A separate table, not columns of `configs`: the record statement share-locks config rows
-- (so that a deactivation waits for it), and counting in-flight attempts on those same rows
-- would make every claim wait for every record.
CREATE TABLE IF NOT EXISTS config_health (
    config_id text PRIMARY KEY REFERENCES configs (id),
    -- closed: attempts flow; open: nothing is attempted until next_probe_at; half_open: one
    -- probe attempt (the claim `probe_token`) is in flight and nothing else is claimed.
    circuit text NOT NULL DEFAULT 'closed' CHECK (circuit IN ('closed', 'open', 'half_open')),
    consecutive_failures integer NOT NULL DEFAULT 0,
    -- Failure-ratio window: attempts and retryable failures since window_started_at.
    window_started_at timestamptz,
    window_attempts integer NOT NULL DEFAULT 0,
    window_failures integer NOT NULL DEFAULT 0,
    opened_at timestamptz,
    next_probe_at timestamptz,
    probe_interval_seconds double precision,
    probe_token uuid,
    last_failure text,
    last_failure_at timestamptz,
    paused_at timestamptz,
    reason text,
    changed_at timestamptz NOT NULL DEFAULT now(),
    -- Held time (paused or open) does not count against any delivery's retry window: the
    -- seconds held before the current hold, and when the current hold began.
    held_seconds double precision NOT NULL DEFAULT 0,
    held_since timestamptz,
    -- After a resume or a closed circuit the cap grows from 1 to its full value (the ramp).
    ramp_started_at timestamptz,
    in_flight integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    max_in_flight integer CHECK (max_in_flight > 0),  -- null: WEBHOOKS_ENDPOINT_CONCURRENCY
    rate_per_second double precision CHECK (rate_per_second > 0),  -- null: no rate limit
    next_send_at timestamptz,  -- with a rate limit: when the next attempt may start
    served_at timestamptz  -- last claim for this config: claims serve the longest-waiting first
);
CREATE INDEX IF NOT EXISTS config_health_held ON config_health (config_id)
    WHERE paused_at IS NOT NULL OR circuit <> 'closed';

INSERT INTO config_health (config_id) SELECT id FROM configs ON CONFLICT DO NOTHING;

-- How many attempts of this config may be in flight now, across all workers: its own cap or
-- the default, grown linearly from 1 over `ramp_seconds` after a resume or a closed circuit,
-- so a held backlog is released gradually. One rule, read by the claim and by the wait.
CREATE OR REPLACE FUNCTION config_cap(health config_health, default_cap integer,
                                      ramp_seconds double precision)
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN health.ramp_started_at > now() - make_interval(secs => ramp_seconds)
        THEN greatest(1, ceil(coalesce(health.max_in_flight, default_cap)
                              * extract(epoch FROM now() - health.ramp_started_at)
                              / ramp_seconds))::integer
        ELSE coalesce(health.max_in_flight, default_cap)
    END
$$;

-- What the API shows: healthy, paused (by an operator, whatever the circuit), open, half_open.
CREATE OR REPLACE FUNCTION config_health_state(health config_health)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN health.paused_at IS NOT NULL THEN 'paused'
                WHEN health.circuit = 'closed' THEN 'healthy'
                ELSE health.circuit END
$$;

-- One config's oldest due deliveries, locked (skipping rows other workers hold), and the
-- time its earliest pending delivery is due. Functions, planned for the config at hand
-- (force_custom_plan): planned once for any config, a statement assumes every config holds
-- an equal share of the due rows, and with few configs it walks the global due index past
-- another config's backlog of any size. Planned per config, the statistics show how many
-- rows that config has, and the (config_id, next_attempt_at) index is used.
CREATE OR REPLACE FUNCTION config_due_deliveries(config text, quota integer)
RETURNS TABLE (id bigint, next_attempt_at timestamptz)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    RETURN QUERY
        SELECT d.id, d.next_attempt_at
        FROM deliveries d
        WHERE d.config_id = config AND d.status = 'pending' AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at
        LIMIT quota
        FOR UPDATE SKIP LOCKED;
END
$$;
CREATE OR REPLACE FUNCTION config_next_due(config text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    RETURN (SELECT d.next_attempt_at
            FROM deliveries d
            WHERE d.config_id = config AND d.status = 'pending'
            ORDER BY d.next_attempt_at
            LIMIT 1);
END
$$;

-- Abort the claim (SQLSTATE 40001, retried by the caller) when the health rows it counted
-- on changed before it could count its deliveries in: a concurrent claim of another worker
-- took the last slots or the probe. Called with how many configs the claim took deliveries
-- of and how many of their health rows it could update under the guard.
CREATE OR REPLACE FUNCTION claim_counted(taken bigint, counted bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF taken <> counted THEN
        RAISE EXCEPTION 'a concurrent claim took the slots this claim counted on'
            USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN true;
END
$$;

-- Every config has its health row from the moment it exists, whichever path inserts it
-- (the API, the upgrade from the former model, a backfill).
CREATE OR REPLACE FUNCTION config_health_for_new_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO config_health (config_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER configs_health_row AFTER INSERT ON configs
    FOR EACH ROW EXECUTE FUNCTION config_health_for_new_config();

-- The held seconds of its config when the delivery was last claimed: the next claim moves
-- generation_started_at forward by what was held in between, so a pause or an open circuit
-- spends none of the retry window. Adding a nullable column rewrites nothing.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS held_mark double precision;

-- concurrently --
-- The claim walks each config's due deliveries through this index. Built without blocking
-- writes (outside the migration's transaction), so dispatch goes on while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_config_due
    ON deliveries (config_id, next_attempt_at) WHERE status = 'pending';
