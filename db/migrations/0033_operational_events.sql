-- Operational events: the platform hears about its customers' endpoints. A worker started with
-- WEBHOOKS_OPERATIONAL_TENANT writes which tenant hears them (`operational_tenant`: one row, or
-- none when they are off). A change that disables a config, opens or closes its circuit,
-- exhausts a delivery or makes a failed delivery hold its ordering key writes, in the
-- statement that makes the change, one row to the outbox `operational_events`, whose id is
-- derived from the change; a worker's relay publishes each row to the operational tenant,
-- through the same path as any published event, and deletes it, in one transaction. So an
-- announcement commits with its change or not at all, and is published once.

CREATE TABLE IF NOT EXISTS operational_tenant (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    tenant_id bigint NOT NULL REFERENCES tenants (id)
);

CREATE TABLE IF NOT EXISTS operational_events (
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- the order they are published in
    event_id text NOT NULL UNIQUE,  -- derived from the change: `<type>:<config or delivery>:<n>`
    type text NOT NULL CHECK (type IN ('endpoint.disabled', 'endpoint.circuit_opened',
                                       'endpoint.recovered', 'delivery.exhausted',
                                       'ordering.key_blocked')),
    tenant_id bigint NOT NULL,  -- the tenant the event is about (never the operational one)
    config_id text NOT NULL,
    reason text,
    actor text,  -- who made the change (a token's name), null for the service's own
    delivery jsonb,  -- of delivery events: the delivery as the change left it
    occurred_at timestamptz NOT NULL DEFAULT now()
);

-- Whether changes of a tenant's configs are announced: a live operational tenant is named, it
-- is not this tenant (the operational tenant's own endpoints announce nothing: a failing
-- endpoint that hears announcements would otherwise announce its own failures, endlessly), and
-- this tenant is not deleted (deleting it stops its configs, which the platform knows: it did).
CREATE OR REPLACE FUNCTION announces_for(subject bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1
                   FROM operational_tenant o
                   JOIN tenants hearing ON hearing.id = o.tenant_id
                   JOIN tenants t ON t.id = subject
                   WHERE o.tenant_id <> subject
                     AND hearing.deleted_at IS NULL AND t.deleted_at IS NULL)
$$;

-- What a delivery event says of its delivery, written once for the statement that exhausts a
-- delivery (record_and_settle) and the trigger of a held key.
CREATE OR REPLACE FUNCTION announced_delivery(d deliveries) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
        'id', d.id, 'event_id', d.event_id, 'event_type', d.event_type,
        'attempts', d.attempt_count, 'replay_generation', d.replay_generation,
        'last_status_code', d.last_status_code, 'ordering_key', d.ordering_key,
        'sequence', d.sequence)
$$;

-- The relay hears of new announcements on a channel of its own, at commit.
CREATE OR REPLACE FUNCTION operational_events_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'webhooks_operational_events'::text
$$;

CREATE OR REPLACE FUNCTION listen_operational_events() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    EXECUTE format('LISTEN %I', operational_events_channel());
END
$$;

CREATE OR REPLACE FUNCTION notify_operational_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(operational_events_channel(), '');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS operational_events_written ON operational_events;
CREATE TRIGGER operational_events_written AFTER INSERT ON operational_events
FOR EACH ROW EXECUTE FUNCTION notify_operational_events();

-- A config's health history announces its deactivations (an operator's, or a 410 Gone's), the
-- openings of its circuit and its recoveries. A circuit that re-opens after a failed probe
-- announces nothing more: it was open already.
CREATE OR REPLACE FUNCTION announce_health_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kind text;
    before text;
BEGIN
    IF NOT announces_for(NEW.tenant_id) THEN
        RETURN NULL;
    END IF;
    IF NEW.change = 'deactivated' THEN
        kind := 'endpoint.disabled';
    ELSIF NEW.change = 'closed' THEN
        kind := 'endpoint.recovered';
    ELSE
        SELECT c.change INTO before
        FROM config_health_changes c
        WHERE c.config_id = NEW.config_id AND c.id < NEW.id
          AND c.change IN ('opened', 'probing', 'closed')
        ORDER BY c.id DESC
        LIMIT 1;
        IF before IN ('opened', 'probing') THEN
            RETURN NULL;
        END IF;
        kind := 'endpoint.circuit_opened';
    END IF;
    INSERT INTO operational_events (event_id, type, tenant_id, config_id, reason, actor,
                                    occurred_at)
    VALUES (kind || ':' || NEW.config_id || ':' || NEW.id, kind, NEW.tenant_id, NEW.config_id,
            NEW.reason, NEW.actor, NEW.changed_at)
    ON CONFLICT (event_id) DO NOTHING;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS config_health_changes_announced ON config_health_changes;
CREATE TRIGGER config_health_changes_announced AFTER INSERT ON config_health_changes
FOR EACH ROW
WHEN (NEW.change IN ('deactivated', 'opened', 'closed'))
EXECUTE FUNCTION announce_health_change();

-- A failed delivery that takes its key (its config is ordered per key and blocks on failure)
-- announces it, once per generation. Only statements that set `blocks_key` fire this.
CREATE OR REPLACE FUNCTION announce_key_blocked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF announces_for(NEW.tenant_id) THEN
        INSERT INTO operational_events (event_id, type, tenant_id, config_id, reason, delivery)
        VALUES ('ordering.key_blocked:' || NEW.id || ':' || NEW.replay_generation,
                'ordering.key_blocked', NEW.tenant_id, NEW.config_id, NEW.last_error,
                announced_delivery(NEW))
        ON CONFLICT (event_id) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS deliveries_key_blocked_announced ON deliveries;
CREATE TRIGGER deliveries_key_blocked_announced AFTER UPDATE OF blocks_key ON deliveries
FOR EACH ROW
WHEN (NEW.blocks_key AND NOT OLD.blocks_key)
EXECUTE FUNCTION announce_key_blocked();
