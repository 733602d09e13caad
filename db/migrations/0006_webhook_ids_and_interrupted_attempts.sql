-- Every statement here only changes the catalog (no table rewrite, no scan under an exclusive
-- lock). Each waits at most 400 ms for its lock, and otherwise the migration gives way and is
-- tried again: with two tables locked in turn, claims and records wait under a second.
SET LOCAL lock_timeout = '400ms';

-- An attempt cut short by a stopping worker is recorded too: the endpoint may have received
-- it. Rows already stored passed the narrower check, so the wider one is not validated
-- against them (a validating scan would run under this statement's exclusive lock).
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_outcome_check,
    ADD CONSTRAINT delivery_attempts_outcome_check
        CHECK (outcome IN ('success', 'http_error', 'timeout', 'network_error', 'blocked',
                           'interrupted')) NOT VALID;

-- The `webhook-id` of a delivery: 'msg_', twelve hex digits of Unix milliseconds (so keys sort
-- by creation time), and a random UUID's 32: unique beyond this database, so two
-- installations, or one whose database was restored or recreated, never send the same one.
CREATE FUNCTION webhook_message_id() RETURNS text
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT 'msg_' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
           || replace(gen_random_uuid()::text, '-', '')
$$;

-- Kept with the delivery, so it is the same across retries and replays. Added without a
-- default and then given one: a volatile default on ADD COLUMN would rewrite the table. New
-- deliveries get their key on insert; one stored before this migration gets it when it is next
-- claimed, before any request carries it. Filling every existing row here instead would hold
-- the row locks of the whole table until this transaction commits, stalling every claim and
-- record meanwhile; a delivery never claimed again keeps no key, and the API shows the id its
-- requests carried (its number).
ALTER TABLE deliveries ADD COLUMN webhook_id text;
ALTER TABLE deliveries ALTER COLUMN webhook_id SET DEFAULT webhook_message_id();

-- Until when each rotated-out secret of a config still signs (newest first, only those that
-- still do): what the API shows about them, never the secrets themselves.
CREATE FUNCTION previous_secrets_expire_at(previous_secrets jsonb) RETURNS timestamptz[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(expires_at ORDER BY position), '{}')
    FROM jsonb_array_elements(previous_secrets) WITH ORDINALITY AS entry (value, position),
         LATERAL (SELECT (value ->> 'expires_at')::timestamptz AS expires_at) AS expiry
    WHERE expires_at > now()
$$;
