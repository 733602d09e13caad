-- The channel on which dispatchers hear that a config stopped sending or changed what it
-- sends: paused, its circuit opened, deactivated, deleted, a new endpoint or secret. A worker
-- keeps a few claimed deliveries of each config ready behind its sends; on this notification
-- it hands back those of the config instead of sending them with what they were claimed
-- with. The payload is the config's id. Named once, as the deliveries-due channel is.
CREATE OR REPLACE FUNCTION config_changed_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'webhooks_config_changed'::text
$$;

-- Subscribes the calling session (from the end of its transaction: call it in autocommit).
CREATE OR REPLACE FUNCTION listen_config_changed() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    EXECUTE format('LISTEN %I', config_changed_channel());
END
$$;

-- A row trigger: TG_ARGV[0] names the column holding the config's id. Sent at commit;
-- repeats for one config within one transaction are delivered once.
CREATE OR REPLACE FUNCTION notify_config_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(config_changed_channel(), to_jsonb(NEW) ->> TG_ARGV[0]);
    RETURN NULL;
END
$$;

-- Triggers, so that every statement that makes a config stop or change its sends notifies,
-- whichever path (API, CLI, the breaker, the 410 rule) ran it.
DROP TRIGGER IF EXISTS configs_changed ON configs;
CREATE TRIGGER configs_changed AFTER UPDATE ON configs FOR EACH ROW
WHEN (OLD.endpoint IS DISTINCT FROM NEW.endpoint
      OR OLD.secret IS DISTINCT FROM NEW.secret
      OR OLD.previous_secrets IS DISTINCT FROM NEW.previous_secrets
      OR (OLD.active AND NOT NEW.active)
      OR (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL))
EXECUTE FUNCTION notify_config_changed('id');

DROP TRIGGER IF EXISTS config_health_held ON config_health;
CREATE TRIGGER config_health_held AFTER UPDATE ON config_health FOR EACH ROW
WHEN ((OLD.paused_at IS NULL AND NEW.paused_at IS NOT NULL)
      OR (OLD.circuit = 'closed' AND NEW.circuit = 'open'))
EXECUTE FUNCTION notify_config_changed('config_id');

-- A claim token marks a delivery in flight: every statement that moves a delivery out of
-- `delivering` clears it, and the record of an attempt is guarded by it alone (a guard on the
-- status as well would lead the planner through the status index). Checked from now on for
-- every row written; NOT VALID skips the scan of the rows already there, which every release
-- wrote this way.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_token_only_in_flight;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_token_only_in_flight
    CHECK (claim_token IS NULL OR status = 'delivering') NOT VALID;

-- The seconds a config's deliveries have been held (paused or circuit open) until now: the
-- held seconds of holds that ended, plus the hold under way. Written once for the claim (which
-- moves each delivery's retry window by what was held since its last claim) and for the
-- statements that end a hold.
CREATE OR REPLACE FUNCTION config_held_seconds(health config_health)
RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT health.held_seconds + coalesce(extract(epoch FROM now() - health.held_since), 0)
$$;
