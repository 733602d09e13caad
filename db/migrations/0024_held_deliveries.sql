-- What holds a pending delivery back, in one place for the API, the CLI and the dry run of a
-- bulk replay: its config's pause (until an operator resumes it), its config's circuit (open:
-- until the next probe; half-open: until the probe in flight answers), or its ordering key
-- (it waits for the key's earlier delivery, named here), whatever its own due time. Nothing
-- holds a delivery that is not pending, nor a pending one of a working config that is due or
-- scheduled for a retry of its own.
CREATE OR REPLACE FUNCTION delivery_hold(status text, config_id text, next_attempt_at timestamptz,
                                         ordering_key text, sequence bigint)
RETURNS TABLE (held_by text, held_since timestamptz, held_until timestamptz,
               held_reason text, held_behind bigint)
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN h.paused_at IS NOT NULL THEN 'pause'
                WHEN h.circuit <> 'closed' THEN 'circuit'
                WHEN next_attempt_at IS NULL THEN 'ordering_key' END,
           CASE WHEN h.paused_at IS NOT NULL THEN h.paused_at
                WHEN h.circuit <> 'closed' THEN h.opened_at END,
           CASE WHEN h.paused_at IS NULL AND h.circuit = 'open' THEN h.next_probe_at END,
           CASE WHEN h.paused_at IS NOT NULL THEN h.reason
                WHEN h.circuit = 'open' THEN h.last_failure
                WHEN h.circuit = 'half_open' THEN 'a probe is in flight' END,
           CASE WHEN h.paused_at IS NULL AND h.circuit = 'closed' AND next_attempt_at IS NULL
                THEN (SELECT k.id FROM deliveries k
                      WHERE k.config_id = delivery_hold.config_id
                        AND k.ordering_key = delivery_hold.ordering_key
                        AND k.sequence < delivery_hold.sequence
                        AND k.sequence IS NOT NULL
                        AND (k.status IN ('pending', 'delivering') OR k.blocks_key)
                      ORDER BY k.sequence
                      LIMIT 1) END
    FROM config_health h
    WHERE h.config_id = delivery_hold.config_id AND delivery_hold.status = 'pending'
$$;

-- Whether a pending delivery is held (by any of the above): making it due changes nothing, so
-- a replay neither expedites it nor counts it. The rule above, asked only whether it holds.
CREATE OR REPLACE FUNCTION pending_is_held(config_id text, next_attempt_at timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1
                   FROM delivery_hold('pending', pending_is_held.config_id,
                                      pending_is_held.next_attempt_at, NULL, NULL) hold
                   WHERE hold.held_by IS NOT NULL)
$$;
