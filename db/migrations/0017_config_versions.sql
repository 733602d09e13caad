-- A config's version: counted up by every change after which a worker must not send what it
-- claimed of the config before (a pause, an opened circuit, a deactivation, a deletion, a new
-- endpoint or secret: the changes that also notify the config-changed channel). The claim
-- returns it with each delivery; a worker that finds a config's version grown since hands
-- back what it still holds of it, NOTIFY or not (behind a pooler, with LISTEN off, or while
-- its listening connection is down).
ALTER TABLE config_health ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION count_config_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS config_health_version ON config_health;
CREATE TRIGGER config_health_version BEFORE UPDATE ON config_health FOR EACH ROW
WHEN ((OLD.paused_at IS NULL AND NEW.paused_at IS NOT NULL)
      OR (OLD.circuit = 'closed' AND NEW.circuit = 'open'))
EXECUTE FUNCTION count_config_change();

CREATE OR REPLACE FUNCTION count_config_change_of_config() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE config_health SET version = version + 1 WHERE config_id = NEW.id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS configs_version ON configs;
CREATE TRIGGER configs_version AFTER UPDATE ON configs FOR EACH ROW
WHEN (OLD.endpoint IS DISTINCT FROM NEW.endpoint
      OR OLD.secret IS DISTINCT FROM NEW.secret
      OR OLD.previous_secrets IS DISTINCT FROM NEW.previous_secrets
      OR (OLD.active AND NOT NEW.active)
      OR (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL))
EXECUTE FUNCTION count_config_change_of_config();
