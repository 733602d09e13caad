-- Ordered delivery, corrected: a config's ordering rules are part of its version, a failure
-- holds its key only when it failed under them, and a config's keys are settled by what is
-- under way, not by every key it ever had.

-- A change of ordering or of blocking on failure counts up the config's version and notifies
-- the config-changed channel, as a new endpoint or secret does: a worker hands back what it
-- claimed of the config before (claimed unordered, several deliveries of one key would
-- otherwise go out at once after a switch to per-key ordering). Which changes those are is
-- written once, for both triggers.
CREATE OR REPLACE FUNCTION config_sends_differently(before configs, after configs)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT before.endpoint IS DISTINCT FROM after.endpoint
        OR before.secret IS DISTINCT FROM after.secret
        OR before.previous_secrets IS DISTINCT FROM after.previous_secrets
        OR (before.active AND NOT after.active)
        OR (before.deleted_at IS NULL AND after.deleted_at IS NOT NULL)
        OR before.ordering IS DISTINCT FROM after.ordering
        OR before.block_on_failure IS DISTINCT FROM after.block_on_failure
$$;

DROP TRIGGER IF EXISTS configs_version ON configs;
CREATE TRIGGER configs_version AFTER UPDATE ON configs FOR EACH ROW
WHEN (config_sends_differently(OLD, NEW))
EXECUTE FUNCTION count_config_change_of_config();

DROP TRIGGER IF EXISTS configs_changed ON configs;
CREATE TRIGGER configs_changed AFTER UPDATE ON configs FOR EACH ROW
WHEN (config_sends_differently(OLD, NEW))
EXECUTE FUNCTION notify_config_changed('id');

-- Settle the turns of the given keys, as before, but take the configs' health rows first (in
-- config id order), then the keys' rows: the lock order every statement follows (configs,
-- deliveries, health rows, key rows). A statement whose deliveries' triggers lock no health
-- row of their own before settling (a skip, a retention delete, a record that only ends an
-- attempt) would otherwise take a key's row and then the health row an ingest of the same
-- config holds while it waits for the key's row.
CREATE OR REPLACE FUNCTION settle_key_turns(config_ids text[], keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    released integer;
BEGIN
    PERFORM 1 FROM config_health
    WHERE config_id = ANY (config_ids)
    ORDER BY config_id
    FOR UPDATE;
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
    -- A delivery that became due wakes the dispatchers at commit, as any other does.
    GET DIAGNOSTICS released = ROW_COUNT;
    IF released > 0 THEN
        PERFORM notify_deliveries_due();
    END IF;
END
$$;

-- A failed delivery holds its key while its config is ordered per key and blocks on failure
-- and no operator has skipped it. Only a failure that happens under those rules takes the key:
-- switching them on (or back on) never makes an earlier failure a holder, since later
-- deliveries of its key may long since have gone; switching them off frees every holder.
CREATE OR REPLACE FUNCTION holds_its_key(status text, ordering text, block_on_failure boolean,
                                         skipped_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT status = 'failed' AND ordering = 'per_key' AND block_on_failure
           AND skipped_at IS NULL
$$;

-- The deliveries' triggers, as before, with the rule above: a delivery that fails takes its
-- key under its config's rules of the moment; one that leaves `failed` frees it.
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
        SELECT array_agg(n.config_id), array_agg(n.ordering_key) INTO config_ids, keys
        FROM number_key_turns(ARRAY(SELECT id FROM new_rows)) n;
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
            SET blocks_key = holds_its_key(d.status, c.ordering, c.block_on_failure,
                                           d.skipped_at)
            FROM changed x
            JOIN configs c ON c.id = x.config_id
            WHERE d.id = x.id
              AND d.blocks_key <> holds_its_key(d.status, c.ordering, c.block_on_failure,
                                                d.skipped_at)
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

-- A config switched between orderings, or between blocking and not, settles the keys that have
-- something under way (read through the index of key turns, so the cost is what is under way,
-- not every key the config ever had). Switched to per-key ordering, its keyed deliveries not
-- yet settled are numbered first, as before. A failure stops holding its key when the rules no
-- longer say it does; none starts.
CREATE OR REPLACE FUNCTION settle_config_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    config_ids text[];
    keys text[];
BEGIN
    -- The health row before the key rows that numbering takes (the one lock order).
    PERFORM 1 FROM config_health WHERE config_id = NEW.id FOR UPDATE;
    IF OLD.ordering = 'unordered' AND NEW.ordering = 'per_key' THEN
        PERFORM number_key_turns(ARRAY(
            SELECT id FROM deliveries
            WHERE config_id = NEW.id AND ordering_key IS NOT NULL AND sequence IS NULL
              AND status IN ('pending', 'delivering')));
    END IF;
    UPDATE deliveries d
    SET blocks_key = false
    WHERE d.config_id = NEW.id AND d.blocks_key
      AND NOT holds_its_key(d.status, NEW.ordering, NEW.block_on_failure, d.skipped_at);
    SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
    FROM (SELECT DISTINCT d.config_id, d.ordering_key
          FROM deliveries d
          WHERE d.config_id = NEW.id AND d.sequence IS NOT NULL
            AND (d.status IN ('pending', 'delivering') OR d.blocks_key)) k;
    IF config_ids IS NOT NULL THEN
        PERFORM settle_key_turns(config_ids, keys);
    END IF;
    RETURN NULL;
END
$$;

DROP FUNCTION IF EXISTS holds_its_key(text, boolean, timestamptz);

-- Holders left by the former rule on configs that are not ordered per key hold nothing.
UPDATE deliveries d
SET blocks_key = false
FROM configs c
WHERE d.blocks_key AND c.id = d.config_id AND c.ordering <> 'per_key';

-- Keys none of whose deliveries are left: retention removed them all. From now on retention
-- forgets such a key as it deletes its last delivery.
DELETE FROM ordering_keys k
WHERE NOT EXISTS (SELECT 1 FROM deliveries d
                  WHERE d.ordering_key = k.ordering_key AND d.config_id = k.config_id);
