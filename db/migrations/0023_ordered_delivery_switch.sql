-- Ordered delivery, continued: the rules "a failed delivery holds its key" and "number a key's
-- deliveries" written once, and a config switched to per-key ordering numbers the deliveries it
-- already has.

-- A failed delivery holds its key while its config blocks on failure and no operator has
-- skipped it.
CREATE OR REPLACE FUNCTION holds_its_key(status text, block_on_failure boolean,
                                         skipped_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT status = 'failed' AND block_on_failure AND skipped_at IS NULL
$$;

-- Number the deliveries among `ids` that take turns (an ordering key, a config ordered per
-- key, no number yet): per config and key in the order they were created, after whatever the
-- key has given. Return the keys numbered. Written once for new deliveries and for those a
-- config already had when it was switched to per-key ordering.
CREATE OR REPLACE FUNCTION number_key_turns(ids bigint[])
RETURNS TABLE (config_id text, ordering_key text)
LANGUAGE sql AS $$
    WITH fresh AS (
        SELECT d.id, d.config_id, d.ordering_key,
               row_number() OVER (PARTITION BY d.config_id, d.ordering_key ORDER BY d.id)
                   AS position,
               count(*) OVER (PARTITION BY d.config_id, d.ordering_key) AS total
        FROM deliveries d
        JOIN configs c ON c.id = d.config_id AND c.ordering = 'per_key'
        WHERE d.id = ANY (ids) AND d.ordering_key IS NOT NULL AND d.sequence IS NULL
    ),
    counted AS (
        INSERT INTO ordering_keys AS k (config_id, ordering_key, last_sequence)
        SELECT DISTINCT f.config_id, f.ordering_key, f.total FROM fresh f
        ORDER BY f.config_id, f.ordering_key
        ON CONFLICT (config_id, ordering_key)
        DO UPDATE SET last_sequence = k.last_sequence + excluded.last_sequence
        RETURNING k.config_id, k.ordering_key, k.last_sequence
    ),
    numbered AS (
        UPDATE deliveries d
        SET sequence = c.last_sequence - f.total + f.position
        FROM fresh f
        JOIN counted c ON c.config_id = f.config_id AND c.ordering_key = f.ordering_key
        WHERE d.id = f.id
        RETURNING d.config_id, d.ordering_key
    )
    SELECT DISTINCT n.config_id, n.ordering_key FROM numbered n
$$;

-- The deliveries' triggers, as before, with the rule above.
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
            SET blocks_key = holds_its_key(d.status, c.block_on_failure, d.skipped_at)
            FROM changed x
            JOIN configs c ON c.id = x.config_id
            WHERE d.id = x.id
              AND d.blocks_key <> holds_its_key(d.status, c.block_on_failure, d.skipped_at)
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

-- A config switched between orderings settles its keys. Switched to per-key ordering, its
-- keyed deliveries not yet settled (pending or in flight) are numbered after whatever their
-- key has given, in the order they were created, so that the order holds from the switch on
-- and not only for events ingested after it. Switched to unordered, every waiting delivery
-- becomes due. A failure stops or starts holding its key with `block_on_failure`.
CREATE OR REPLACE FUNCTION settle_config_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    config_ids text[];
    keys text[];
BEGIN
    IF OLD.ordering = 'unordered' AND NEW.ordering = 'per_key' THEN
        PERFORM number_key_turns(ARRAY(
            SELECT id FROM deliveries
            WHERE config_id = NEW.id AND ordering_key IS NOT NULL AND sequence IS NULL
              AND status IN ('pending', 'delivering')));
    END IF;
    UPDATE deliveries d
    SET blocks_key = holds_its_key(d.status, NEW.block_on_failure, d.skipped_at)
    WHERE d.config_id = NEW.id AND d.sequence IS NOT NULL AND d.status = 'failed'
      AND d.blocks_key <> holds_its_key(d.status, NEW.block_on_failure, d.skipped_at);
    SELECT array_agg(config_id), array_agg(ordering_key) INTO config_ids, keys
    FROM ordering_keys WHERE config_id = NEW.id;
    IF config_ids IS NOT NULL THEN
        PERFORM settle_key_turns(config_ids, keys);
    END IF;
    RETURN NULL;
END
$$;
