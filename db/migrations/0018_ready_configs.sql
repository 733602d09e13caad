-- The ready set: each config's health row carries when its earliest pending delivery is due
-- (`next_due_at`, null when nothing of it is pending), kept in step with its deliveries by
-- the triggers below in the transaction of every statement that changes them. The claim, the
-- next-due check and the wake-up read the health rows of the configs with something pending
-- through an index on it, and never the rest: a platform with a hundred thousand configs,
-- nearly all idle, claims as fast as one with ten.
ALTER TABLE config_health ADD COLUMN IF NOT EXISTS next_due_at timestamptz;

-- A health row is now written twice by one claim (its counts, then its next due time), and
-- PostgreSQL checks a foreign key again on any update of a row its own transaction wrote:
-- the check share-locks the config's row, so a claim would wait for a deactivation or a
-- replay holding that row, and deadlock with one waiting for the health row in turn.
-- Configs are never deleted (a deletion marks them), and every config gets its health row
-- from a trigger; the constraint guarded nothing these do not.
ALTER TABLE config_health DROP CONSTRAINT IF EXISTS config_health_config_id_fkey;

-- A statement trigger's changes to pending deliveries, reduced per config: the earliest due
-- time a row took on by becoming pending (or due sooner), and whether a row that was pending
-- left the pending set or became due later (then the config's next due time is looked up
-- again). Only rows whose status or due time changed count; a pending row without a due
-- time (one that waits for its ordering key's turn) counts as not pending.
CREATE OR REPLACE FUNCTION keep_ready_configs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    sooner timestamptz[];
    later boolean[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(config_id ORDER BY config_id), array_agg(due ORDER BY config_id),
               array_agg(false)
        INTO ids, sooner, later
        FROM (SELECT config_id, min(next_attempt_at) AS due
              FROM new_rows WHERE status = 'pending'
              GROUP BY config_id) changed;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT config_id ORDER BY config_id)
        INTO ids
        FROM old_rows WHERE status = 'pending';
        SELECT array_agg(NULL::timestamptz), array_agg(true) INTO sooner, later
        FROM unnest(ids);
    ELSE
        SELECT array_agg(config_id ORDER BY config_id), array_agg(due ORDER BY config_id),
               array_agg(moved_later ORDER BY config_id)
        INTO ids, sooner, later
        FROM (SELECT n.config_id,
                     min(n.next_attempt_at) FILTER (
                         WHERE n.status = 'pending'
                           AND (o.status <> 'pending' OR o.next_attempt_at IS NULL
                                OR n.next_attempt_at < o.next_attempt_at)
                     ) AS due,
                     coalesce(bool_or(o.status = 'pending' AND o.next_attempt_at IS NOT NULL
                                      AND (n.status <> 'pending' OR n.next_attempt_at IS NULL
                                           OR n.next_attempt_at > o.next_attempt_at)),
                              false) AS moved_later
              FROM new_rows n JOIN old_rows o USING (id)
              WHERE (n.status = 'pending' OR o.status = 'pending')
                AND (n.status IS DISTINCT FROM o.status
                     OR n.next_attempt_at IS DISTINCT FROM o.next_attempt_at)
              GROUP BY n.config_id) changed;
    END IF;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    -- Locked in config id order (as every statement that locks several health rows does),
    -- and only then is the next due time looked up: this statement starts with a snapshot
    -- taken after the locks, so every other transaction that changed these configs'
    -- deliveries and reached this point before has committed and is seen. One still on its
    -- way here sees this one's changes when it arrives. So the last to commit leaves the truth.
    PERFORM 1 FROM config_health WHERE config_id = ANY (ids) ORDER BY config_id FOR UPDATE;
    UPDATE config_health h
    SET next_due_at = CASE WHEN u.later THEN u.looked_up ELSE least(h.next_due_at, u.sooner) END
    FROM (SELECT u.id, u.sooner, u.later,
                 CASE WHEN u.later THEN config_next_due(u.id) END AS looked_up
          FROM unnest(ids, sooner, later) AS u (id, sooner, later)) u
    WHERE h.config_id = u.id
      AND h.next_due_at IS DISTINCT FROM
          CASE WHEN u.later THEN u.looked_up ELSE least(h.next_due_at, u.sooner) END;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS deliveries_ready_inserted ON deliveries;
CREATE TRIGGER deliveries_ready_inserted AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_ready_configs();
DROP TRIGGER IF EXISTS deliveries_ready_updated ON deliveries;
CREATE TRIGGER deliveries_ready_updated AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_ready_configs();
DROP TRIGGER IF EXISTS deliveries_ready_deleted ON deliveries;
CREATE TRIGGER deliveries_ready_deleted AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_ready_configs();

-- The rows already there: the triggers exist from here on in this transaction, which holds a
-- lock on deliveries that keeps every writer out until it commits, so nothing changes between
-- this look-up and the first trigger.
UPDATE config_health h SET next_due_at = config_next_due(h.config_id)
WHERE h.next_due_at IS DISTINCT FROM config_next_due(h.config_id);

-- When a claim could next take something of a config with pending work: its earliest due
-- delivery, but not before its rate's next slot, nor, with its circuit open, before its
-- probe is due. One rule for the claim and the next-due check, and the ready set's key.
CREATE OR REPLACE FUNCTION config_ready_at(next_due_at timestamptz, circuit text,
                                           next_probe_at timestamptz, next_send_at timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT greatest(next_due_at, next_send_at,
                    CASE WHEN circuit = 'open' THEN next_probe_at END)
$$;

-- A config's turn in the claims' round: when it could next take something, or when it was
-- last served if later. Walked in this order from the earliest, the claims serve the ready
-- configs round-robin (a config served goes to the back; one that becomes ready joins the
-- back), and a walk stops after the configs it takes: a claim costs the same beside fifty
-- thousand ready configs as beside ten.
CREATE OR REPLACE FUNCTION config_turn_at(next_due_at timestamptz, circuit text,
                                          next_probe_at timestamptz, next_send_at timestamptz,
                                          served_at timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Built-in functions only: an index expression is also evaluated where the search path
    -- holds the system catalog alone (ANALYZE, VACUUM), so it may not call config_ready_at.
    SELECT greatest(next_due_at, next_send_at,
                    CASE WHEN circuit = 'open' THEN next_probe_at END, served_at)
$$;

-- The ready set: configs with pending work, not paused, not waiting for a probe's answer.
-- Idle configs are not in it, nor paused ones whatever their backlog; an open one waits at
-- its probe time. By turn for the claim; by when it could next take something for the
-- next-due check.
DROP INDEX IF EXISTS config_health_ready;
CREATE INDEX config_health_ready
    ON config_health (config_ready_at(next_due_at, circuit, next_probe_at, next_send_at))
    WHERE next_due_at IS NOT NULL AND paused_at IS NULL AND circuit <> 'half_open';
DROP INDEX IF EXISTS config_health_turns;
CREATE INDEX config_health_turns
    ON config_health (config_turn_at(next_due_at, circuit, next_probe_at, next_send_at,
                                     served_at))
    WHERE next_due_at IS NOT NULL AND paused_at IS NULL AND circuit <> 'half_open';
