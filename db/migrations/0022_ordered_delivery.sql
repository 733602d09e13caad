-- Ordered delivery, opt-in per config. A config with `ordering = 'per_key'` has the
-- deliveries of one ordering key attempted one at a time, in the order their events were
-- ingested: each such delivery is numbered (`sequence`, 1, 2, 3… per config and key, in
-- the order the numbering transactions commit), and only the key's head — its lowest
-- sequence still pending or delivering, or failed and holding the key — may be due. The
-- others are pending without a due time (`next_attempt_at` null): they wait, the claim never
-- sees them, and they become due when the head's outcome is settled. All of it is kept by
-- the triggers below, in the transaction of whatever statement changed the deliveries, so
-- every path (the record, recovery, hand-back, replay, deactivation) keeps the order.
ALTER TABLE configs ADD COLUMN IF NOT EXISTS ordering text NOT NULL DEFAULT 'unordered'
    CHECK (ordering IN ('unordered', 'per_key'));
-- With true, a failed delivery holds its key until it is replayed and succeeds (or an
-- operator skips it); with false, the key moves on once one fails.
ALTER TABLE configs ADD COLUMN IF NOT EXISTS block_on_failure boolean NOT NULL DEFAULT true;

ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS sequence bigint;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS blocks_key boolean NOT NULL DEFAULT false;
-- An operator let the key go on past this failed delivery (skipDelivery): it holds it no more.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS skipped_at timestamptz;

-- Each ordered config's keys and the last sequence each has given; its row is the lock that
-- serialises the numbering and the turns of one key.
CREATE TABLE IF NOT EXISTS ordering_keys (
    config_id text NOT NULL,
    ordering_key text NOT NULL,
    last_sequence bigint NOT NULL,
    PRIMARY KEY (config_id, ordering_key)
);

-- A pending delivery waiting for its key's turn has no due time.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_pending_has_due_or_waits;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_pending_has_due_or_waits
    CHECK (status <> 'pending' OR next_attempt_at IS NOT NULL OR sequence IS NOT NULL)
    NOT VALID;
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_pending_has_due;

-- Settle the turns of the given keys: each key's head is due (at the time it had, or now if
-- it waited) unless a delivery of the key is in flight; every other pending delivery of the
-- key waits. Each key's row is locked first, in key order, and the turns are then read in a
-- statement of their own, so that every transaction that changed the key's deliveries and
-- got here before has committed and is seen.
CREATE OR REPLACE FUNCTION settle_key_turns(config_ids text[], keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    released integer;
BEGIN
    PERFORM 1 FROM ordering_keys k
    JOIN unnest(config_ids, keys) AS t (config_id, ordering_key)
      ON k.config_id = t.config_id AND k.ordering_key = t.ordering_key
    ORDER BY k.config_id, k.ordering_key
    FOR UPDATE OF k;
    WITH touched AS (
        SELECT DISTINCT t.config_id, t.ordering_key, c.ordering = 'per_key' AS ordered
        FROM unnest(config_ids, keys) AS t (config_id, ordering_key)
        JOIN configs c ON c.id = t.config_id
    ),
    heads AS (
        SELECT t.config_id, t.ordering_key, t.ordered, head.id AS head_id,
               -- due only with nothing of the key in flight: a replayed earlier delivery
               -- waits for a later one already sent to be settled
               head.status = 'pending' AND NOT EXISTS (
                   SELECT 1 FROM deliveries f
                   WHERE f.config_id = t.config_id AND f.ordering_key = t.ordering_key
                     AND f.sequence IS NOT NULL AND f.status = 'delivering') AS head_pending
        FROM touched t
        LEFT JOIN LATERAL (
            SELECT d.id, d.status
            FROM deliveries d
            WHERE d.config_id = t.config_id AND d.ordering_key = t.ordering_key
              AND d.sequence IS NOT NULL
              AND (d.status IN ('pending', 'delivering') OR d.blocks_key)
            ORDER BY d.sequence
            LIMIT 1
        ) head ON true
    )
    UPDATE deliveries d
    SET next_attempt_at = CASE
            WHEN NOT h.ordered OR (d.id = h.head_id AND h.head_pending)
            THEN coalesce(d.next_attempt_at, now()) END,
        updated_at = now()
    FROM heads h
    WHERE d.config_id = h.config_id AND d.ordering_key = h.ordering_key
      AND d.sequence IS NOT NULL AND d.status = 'pending'
      AND (d.next_attempt_at IS NULL)
          <> NOT (NOT h.ordered OR (d.id = h.head_id AND h.head_pending));
    -- A delivery that became due wakes the dispatchers at commit, as any other does (one
    -- that was made to wait wakes them for nothing, which costs a claim that finds it gone).
    GET DIAGNOSTICS released = ROW_COUNT;
    IF released > 0 THEN
        PERFORM notify_deliveries_due();
    END IF;
END
$$;

-- The triggers: number the new deliveries of ordered configs and make them wait their turn;
-- keep `blocks_key` (a failed delivery of a config that blocks on failure, not skipped); and
-- settle the turns of every key whose deliveries changed. Named to fire after the ready
-- set's triggers (the health rows first, then the keys: one lock order for every path);
-- their own nested updates are settled by the outer call.
CREATE OR REPLACE FUNCTION keep_key_turns() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    config_ids text[];
    keys text[];
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        -- Number the keyed deliveries of ordered configs, in insertion order per key.
        WITH fresh AS (
            SELECT n.id, n.config_id, n.ordering_key,
                   row_number() OVER (PARTITION BY n.config_id, n.ordering_key ORDER BY n.id)
                       AS position,
                   count(*) OVER (PARTITION BY n.config_id, n.ordering_key) AS total
            FROM new_rows n
            JOIN configs c ON c.id = n.config_id AND c.ordering = 'per_key'
            WHERE n.ordering_key IS NOT NULL
        ),
        counted AS (
            INSERT INTO ordering_keys AS k (config_id, ordering_key, last_sequence)
            SELECT DISTINCT config_id, ordering_key, total FROM fresh
            ORDER BY config_id, ordering_key
            ON CONFLICT (config_id, ordering_key)
            DO UPDATE SET last_sequence = k.last_sequence + excluded.last_sequence
            RETURNING k.config_id, k.ordering_key, k.last_sequence
        ),
        numbered AS (
            UPDATE deliveries d
            SET sequence = c.last_sequence - f.total + f.position
            FROM fresh f
            JOIN counted c USING (config_id, ordering_key)
            WHERE d.id = f.id
            RETURNING d.config_id, d.ordering_key
        )
        SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
        FROM (SELECT DISTINCT config_id, ordering_key FROM numbered) k;
    ELSIF TG_OP = 'UPDATE' THEN
        WITH changed AS (
            SELECT n.id, n.config_id, n.ordering_key, n.status, n.blocks_key,
                   o.status AS was
            FROM new_rows n
            JOIN old_rows o USING (id)
            WHERE n.sequence IS NOT NULL
              AND (n.status IS DISTINCT FROM o.status
                   OR n.next_attempt_at IS DISTINCT FROM o.next_attempt_at
                   OR n.blocks_key IS DISTINCT FROM o.blocks_key
                   OR n.skipped_at IS DISTINCT FROM o.skipped_at)
        ),
        blocking AS (
            UPDATE deliveries d
            SET blocks_key = (d.status = 'failed' AND c.block_on_failure
                              AND d.skipped_at IS NULL)
            FROM changed x
            JOIN configs c ON c.id = x.config_id
            WHERE d.id = x.id
              AND d.blocks_key IS DISTINCT FROM (d.status = 'failed' AND c.block_on_failure
                                                 AND d.skipped_at IS NULL)
            RETURNING d.id
        )
        SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
        FROM (SELECT DISTINCT config_id, ordering_key FROM changed
              -- a claim (pending to delivering) changes no turn
              WHERE NOT (was = 'pending' AND status = 'delivering')
                 OR id IN (SELECT id FROM blocking)) k;
    ELSE
        SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
        FROM (SELECT DISTINCT config_id, ordering_key FROM old_rows
              WHERE sequence IS NOT NULL) k;
    END IF;
    IF config_ids IS NOT NULL THEN
        PERFORM settle_key_turns(config_ids, keys);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS deliveries_turns_inserted ON deliveries;
CREATE TRIGGER deliveries_turns_inserted AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_key_turns();
DROP TRIGGER IF EXISTS deliveries_turns_updated ON deliveries;
CREATE TRIGGER deliveries_turns_updated AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_key_turns();
DROP TRIGGER IF EXISTS deliveries_turns_deleted ON deliveries;
CREATE TRIGGER deliveries_turns_deleted AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION keep_key_turns();

-- A config switched between orderings settles its keys: to unordered, every waiting
-- delivery becomes due; a failure stops or starts holding its key with `block_on_failure`.
CREATE OR REPLACE FUNCTION settle_config_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    config_ids text[];
    keys text[];
BEGIN
    UPDATE deliveries d
    SET blocks_key = (d.status = 'failed' AND NEW.block_on_failure AND d.skipped_at IS NULL)
    WHERE d.config_id = NEW.id AND d.sequence IS NOT NULL AND d.status = 'failed'
      AND d.blocks_key IS DISTINCT FROM (d.status = 'failed' AND NEW.block_on_failure
                                         AND d.skipped_at IS NULL);
    SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
    FROM ordering_keys WHERE config_id = NEW.id;
    IF config_ids IS NOT NULL THEN
        PERFORM settle_key_turns(config_ids, keys);
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS configs_ordering_changed ON configs;
CREATE TRIGGER configs_ordering_changed AFTER UPDATE ON configs FOR EACH ROW
WHEN (OLD.ordering IS DISTINCT FROM NEW.ordering
      OR OLD.block_on_failure IS DISTINCT FROM NEW.block_on_failure)
EXECUTE FUNCTION settle_config_keys();

-- concurrently --
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_pending_has_due_or_waits;
-- The keys held by a failure, per config (Config.blockedKeys, stats.blockedKeys).
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_blocking_keys
    ON deliveries (config_id, ordering_key) WHERE blocks_key;
-- A key's deliveries in order, those that can be its head: the turns walk it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_key_turns
    ON deliveries (config_id, ordering_key, sequence)
    WHERE sequence IS NOT NULL AND (status IN ('pending', 'delivering') OR blocks_key);
