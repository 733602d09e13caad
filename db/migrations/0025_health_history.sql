-- A config's health history: every pause, resume and reset, every circuit transition (opened,
-- probing, closed, reopened), every deactivation (an operator's, or a 410 Gone), activation
-- and deletion, kept as a row with when, who and why. Triggers write it, so no path that
-- changes the state can forget to; the actor is the transaction's `webhooks.actor` setting
-- (an API token's name, `cli:<user>`), null for the service's own changes.
CREATE TABLE IF NOT EXISTS config_health_changes (
    id bigserial PRIMARY KEY,
    config_id text NOT NULL REFERENCES configs (id),
    changed_at timestamptz NOT NULL DEFAULT now(),
    change text NOT NULL CHECK (change IN ('paused', 'resumed', 'opened', 'probing',
                                           'closed', 'deactivated', 'activated', 'deleted')),
    circuit text,  -- the circuit after the change
    actor text,
    reason text
);
CREATE INDEX IF NOT EXISTS config_health_changes_by_config
    ON config_health_changes (config_id, id);

CREATE OR REPLACE FUNCTION note_health_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    actor text := nullif(current_setting('webhooks.actor', true), '');
BEGIN
    IF OLD.paused_at IS NULL AND NEW.paused_at IS NOT NULL THEN
        INSERT INTO config_health_changes (config_id, change, circuit, actor, reason)
        VALUES (NEW.config_id, 'paused', NEW.circuit, actor, NEW.reason);
    ELSIF OLD.paused_at IS NOT NULL AND NEW.paused_at IS NULL THEN
        INSERT INTO config_health_changes (config_id, change, circuit, actor, reason)
        VALUES (NEW.config_id, 'resumed', NEW.circuit, actor, NEW.reason);
    END IF;
    IF OLD.circuit IS DISTINCT FROM NEW.circuit THEN
        INSERT INTO config_health_changes (config_id, change, circuit, actor, reason)
        VALUES (NEW.config_id,
                CASE NEW.circuit WHEN 'open' THEN 'opened' WHEN 'half_open' THEN 'probing'
                                 ELSE 'closed' END,
                NEW.circuit, actor, NEW.reason);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS config_health_history ON config_health;
CREATE TRIGGER config_health_history
AFTER UPDATE OF paused_at, circuit ON config_health
FOR EACH ROW
WHEN (OLD.paused_at IS DISTINCT FROM NEW.paused_at OR OLD.circuit IS DISTINCT FROM NEW.circuit)
EXECUTE FUNCTION note_health_change();

CREATE OR REPLACE FUNCTION note_activity_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO config_health_changes (config_id, change, actor, reason)
    VALUES (NEW.id,
            CASE WHEN NEW.deleted_at IS NOT NULL THEN 'deleted'
                 WHEN NEW.active THEN 'activated' ELSE 'deactivated' END,
            nullif(current_setting('webhooks.actor', true), ''),
            nullif(current_setting('webhooks.reason', true), ''));
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS config_activity_history ON configs;
CREATE TRIGGER config_activity_history
AFTER UPDATE OF active, deleted_at ON configs
FOR EACH ROW
WHEN (OLD.active IS DISTINCT FROM NEW.active OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
EXECUTE FUNCTION note_activity_change();

-- concurrently --
-- The lookup by the `webhook-id` a receiver logged (`msg_…`); deliveries made before webhook
-- ids were kept have none and are found by their number.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_by_webhook_id
    ON deliveries (webhook_id) WHERE webhook_id IS NOT NULL;
