-- The channel on which dispatchers hear that deliveries became due, named once: statements
-- notify through notify_deliveries_due() and a worker subscribes through
-- listen_deliveries_due(). The name is the one the service always used, so workers of the
-- previous release (which LISTEN on it by name) keep hearing the new statements' notifications.
CREATE OR REPLACE FUNCTION deliveries_due_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'webhooks_deliveries_due'::text
$$;

-- Sent when the transaction commits; repeats within one transaction are delivered once.
CREATE OR REPLACE FUNCTION notify_deliveries_due() RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify(deliveries_due_channel(), '')
$$;

-- Subscribes the calling session (from the end of its transaction: call it in autocommit).
CREATE OR REPLACE FUNCTION listen_deliveries_due() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    EXECUTE format('LISTEN %I', deliveries_due_channel());
END
$$;
