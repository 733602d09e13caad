-- Claims fair by tenant, then by config within it, that cost what they take; and a tenant's
-- deliveriesPerSecond, enforced where deliveries are claimed.
--
-- Until now the claim walked the configs with something due in turn order: fair across
-- configs, so a tenant with a thousand backlogged configs took a thousand turns for each turn
-- of a tenant with one. Now the claim walks the tenants with something due first, the
-- longest-unserved first (each tenant's row of `tenant_turns`), and then, within each of
-- them, its configs in turn order. A claim reads the tenants and configs it takes and no
-- others, however many exist and however many of them are due.
--
-- A tenant's row says when a claim could next take something of it: `ready_at`, a lower bound
-- of its configs' ready times (null: none of its configs has anything pending). Only claims
-- write these rows, each row taken with SKIP LOCKED, so no claim waits for another and no
-- other statement waits for a claim here. What makes a config ready sooner (an event, a
-- retry coming due, a resume, a closed circuit, a hand-back) is written elsewhere, by any
-- number of transactions at once: it leaves a row in `tenant_wakes` (one per statement and
-- tenant, an insert that waits for nothing), which the claims merge into the tenants' rows.
-- A claim that looks at a tenant sets its `ready_at` to what its statement sees; a wake that
-- committed after that statement began is not seen, so it is not deleted either, and the
-- next claim sees it: a config that becomes ready is never missed, whichever commits first.

CREATE TABLE IF NOT EXISTS tenant_turns (
    tenant_id bigint PRIMARY KEY,
    -- No earlier than this can a claim take anything of the tenant's configs (their earliest
    -- turn as the last claim that looked saw it, lowered by wakes since); null: nothing of
    -- theirs is pending.
    ready_at timestamptz,
    served_at timestamptz,  -- the last claim that looked at it
    -- With deliveriesPerSecond: when the tenant's next delivery may be claimed (the rate's
    -- schedule, moved on by what each claim takes).
    next_send_at timestamptz
);

CREATE TABLE IF NOT EXISTS tenant_wakes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id bigint NOT NULL,
    ready_at timestamptz NOT NULL  -- the earliest ready time a config of the tenant took on
);

-- A tenant's turn in the claims' round, as a config's (migration 0018): when it could next
-- take something, or when it was last looked at if later.
CREATE OR REPLACE FUNCTION tenant_turn_at(ready_at timestamptz, next_send_at timestamptz,
                                          served_at timestamptz)
RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT greatest(ready_at, next_send_at, served_at)
$$;

-- Every tenant has its row from the moment it exists.
CREATE OR REPLACE FUNCTION tenant_turns_for_new_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tenant_turns (tenant_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS tenants_turns_row ON tenants;
CREATE TRIGGER tenants_turns_row AFTER INSERT ON tenants
    FOR EACH ROW EXECUTE FUNCTION tenant_turns_for_new_tenant();

-- A statement that made a config ready, or ready sooner, wakes its tenant. Claims only ever
-- make configs ready later (served, their rate's slot taken), so they wake nothing.
CREATE OR REPLACE FUNCTION wake_tenants() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tenant_wakes (tenant_id, ready_at)
    SELECT n.tenant_id,
           min(config_ready_at(n.next_due_at, n.circuit, n.next_probe_at, n.next_send_at))
    FROM new_rows n
    JOIN old_rows o USING (config_id)
    WHERE n.next_due_at IS NOT NULL AND n.paused_at IS NULL AND n.circuit <> 'half_open'
      AND (o.next_due_at IS NULL OR o.paused_at IS NOT NULL OR o.circuit = 'half_open'
           OR config_ready_at(n.next_due_at, n.circuit, n.next_probe_at, n.next_send_at)
              < config_ready_at(o.next_due_at, o.circuit, o.next_probe_at, o.next_send_at))
    GROUP BY n.tenant_id;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS config_health_wakes ON config_health;
CREATE TRIGGER config_health_wakes AFTER UPDATE ON config_health
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION wake_tenants();

-- The rows of the tenants there are, each woken at its configs' earliest turn: the triggers
-- exist from here on in this transaction, which holds config_health against every writer.
INSERT INTO tenant_turns (tenant_id) SELECT id FROM tenants ON CONFLICT DO NOTHING;
UPDATE tenant_turns t
SET ready_at = r.ready_at
FROM (SELECT h.tenant_id,
             min(config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                                h.served_at)) AS ready_at
      FROM config_health h
      WHERE h.next_due_at IS NOT NULL AND h.paused_at IS NULL AND h.circuit <> 'half_open'
      GROUP BY h.tenant_id) r
WHERE t.tenant_id = r.tenant_id;

-- The tenants a claim could take something of now, the longest-unserved first, walked through
-- their turns' index and stopping after `lim` (tenants with nothing pending are not in it),
-- together with the tenants woken since the last claims looked (`woken_ids` at `woken_at`);
-- with how many deliveries each may take (`quota`: its rate's burst, or `lim`) and its place.
-- Bitmap scans are off for the walk, as for the configs' (migration 0027): the ordered walk
-- is then the cheaper plan whatever the statistics say.
CREATE OR REPLACE FUNCTION claimable_tenants(lim integer, rate_burst double precision,
                                             woken_ids bigint[], woken_at timestamptz[])
RETURNS TABLE (tenant_id bigint, place bigint, rate double precision,
               next_send_at timestamptz, quota integer)
LANGUAGE plpgsql STABLE ROWS 10
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.tenant_id, row_number() OVER (ORDER BY c.turn, c.tenant_id), tn.deliveries_per_second,
           c.next_send_at,
           least(lim, CASE WHEN tn.deliveries_per_second IS NOT NULL
                           THEN greatest(1, floor(tn.deliveries_per_second * rate_burst))::integer
                      END)
    FROM (
        SELECT u.tenant_id, min(u.turn) AS turn, min(u.next_send_at) AS next_send_at
        FROM (
            (SELECT t.tenant_id, tenant_turn_at(t.ready_at, t.next_send_at, t.served_at) AS turn,
                    t.next_send_at
             FROM tenant_turns t
             WHERE tenant_turn_at(t.ready_at, t.next_send_at, t.served_at) <= now()
               AND t.ready_at IS NOT NULL
             ORDER BY tenant_turn_at(t.ready_at, t.next_send_at, t.served_at)
             LIMIT lim)
            UNION ALL
            SELECT t.tenant_id, tenant_turn_at(w.ready_at, t.next_send_at, t.served_at),
                   t.next_send_at
            FROM unnest(woken_ids, woken_at) AS w (tenant_id, ready_at)
            JOIN tenant_turns t ON t.tenant_id = w.tenant_id
            WHERE tenant_turn_at(w.ready_at, t.next_send_at, t.served_at) <= now()
        ) u
        GROUP BY u.tenant_id
        ORDER BY min(u.turn), u.tenant_id
        LIMIT lim
    ) c
    JOIN tenants tn ON tn.id = c.tenant_id;
END
$$;

-- Within each of the given tenants (in the claim's order), the configs that may send now and
-- have something due, in turn order, at most `per_tenant` of each, with how many deliveries
-- each may take (`quota`) and its place within its tenant: the walk of migration 0027, one
-- tenant at a time through the tenant's turns index.
CREATE OR REPLACE FUNCTION claimable_configs(tenant_ids bigint[], per_tenant integer,
                                             cap integer, ramp double precision,
                                             rate_burst double precision, capacity integer,
                                             hold integer, room_ids text[], rooms integer[])
RETURNS TABLE (tenant_id bigint, config_id text, place bigint, circuit text,
               rate_per_second double precision, max_in_flight integer, version bigint,
               held_now double precision, quota integer)
LANGUAGE plpgsql STABLE ROWS 50
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT g.tenant_id, h.config_id,
           row_number() OVER (PARTITION BY g.tenant_id ORDER BY h.turn, h.config_id),
           h.circuit, h.rate_per_second, h.max_in_flight, h.version, h.held_now, h.quota
    FROM unnest(tenant_ids) AS g (tenant_id)
    CROSS JOIN LATERAL (
        SELECT h.config_id, h.circuit, h.rate_per_second, h.max_in_flight, h.version,
               config_held_seconds(h) AS held_now,
               config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                              h.served_at) AS turn,
               greatest(0, least(
                   config_cap(h, cap, ramp) - h.in_flight,
                   r.room,  -- the worker's own bound
                   CASE WHEN h.circuit = 'open' THEN 1 END,  -- a probe is one delivery
                   CASE WHEN h.rate_per_second IS NOT NULL  -- the rate's burst
                        THEN greatest(1, floor(h.rate_per_second * rate_burst))::integer END
               )) AS quota
        FROM config_health h
        -- What the worker may still take of the config: `hold` shares less what it holds.
        CROSS JOIN LATERAL (
            SELECT coalesce((SELECT w.room
                             FROM unnest(room_ids, rooms) AS w (id, room)
                             WHERE w.id = h.config_id),
                            hold * CASE WHEN h.max_in_flight IS NULL THEN cap
                                        ELSE least(h.max_in_flight, capacity) END) AS room
        ) r
        WHERE h.tenant_id = g.tenant_id
          AND config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                             h.served_at) <= now()
          AND config_ready_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at) <= now()
          AND h.next_due_at IS NOT NULL AND h.paused_at IS NULL AND h.circuit <> 'half_open'
          AND h.in_flight < config_cap(h, cap, ramp)
          AND r.room > 0
        -- As the tenant's turns index is ordered (the tenant given): that index, in order.
        ORDER BY h.tenant_id, config_turn_at(h.next_due_at, h.circuit, h.next_probe_at,
                                             h.next_send_at, h.served_at)
        LIMIT per_tenant
    ) h;
END
$$;

-- Each given config's oldest due deliveries, read without a lock (the claim locks only those
-- it takes): first up to its share (`shares`: what a claim of `lim` would take of it if every
-- config had as many due), then, when that made fewer than `lim` in all, up to its quota
-- from those that had more. So a claim of fifty over ten configs reads fifty rows, not ten
-- times each config's room, and one over a busy config beside quiet ones still fills up.
-- One statement a pass, planned once per session as the prepared claim is. A config's rows
-- are bounded and ordered as a range of the (config_id, next_attempt_at) index, which no
-- other index can serve, and with bitmap scans and sorts off they come in due order from
-- that index whatever the statistics say: asked for by `config_id = ...` and ordered by the
-- due time, the plan made for any config walked the global due index past every other
-- config's rows (it expected the due times' physical order to make that cheap), so ten
-- configs with a backlog each cost twenty times what they should. A backlog of a hundred
-- thousand costs what is read.
CREATE OR REPLACE FUNCTION due_deliveries(config_ids text[], quotas integer[], shares integer[],
                                          lim integer)
RETURNS TABLE (config_id text, id bigint, next_attempt_at timestamptz)
LANGUAGE plpgsql STABLE ROWS 100
SET enable_bitmapscan = off SET enable_sort = off SET enable_incremental_sort = off
AS $$
#variable_conflict use_column
DECLARE
    taken bigint;
BEGIN
    RETURN QUERY
    SELECT u.config_id, d.id, d.next_attempt_at
    FROM unnest(config_ids, quotas, shares) AS u (config_id, quota, share)
    CROSS JOIN LATERAL (
        SELECT d.id, d.next_attempt_at
        FROM deliveries d
        WHERE (d.config_id, d.next_attempt_at) >= (u.config_id, '-infinity'::timestamptz)
          AND (d.config_id, d.next_attempt_at) <= (u.config_id, now())
          AND d.status = 'pending'
        ORDER BY d.config_id, d.next_attempt_at
        LIMIT least(u.quota, u.share)
    ) d;
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken < lim THEN
        RETURN QUERY
        SELECT u.config_id, d.id, d.next_attempt_at
        FROM unnest(config_ids, quotas, shares) AS u (config_id, quota, share)
        CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at
            FROM deliveries d
            WHERE (d.config_id, d.next_attempt_at) >= (u.config_id, '-infinity'::timestamptz)
              AND (d.config_id, d.next_attempt_at) <= (u.config_id, now())
              AND d.status = 'pending'
            ORDER BY d.config_id, d.next_attempt_at
            OFFSET u.share
            LIMIT least(u.quota - u.share, lim - taken)
        ) d
        WHERE u.quota > u.share;
    END IF;
END
$$;

-- The time each given config's earliest pending delivery is due (null: none is pending), in
-- one statement planned once per session, through the same index range as due_deliveries.
CREATE OR REPLACE FUNCTION configs_next_due(config_ids text[])
RETURNS TABLE (config_id text, next_due timestamptz)
LANGUAGE plpgsql STABLE ROWS 50
SET enable_bitmapscan = off SET enable_sort = off SET enable_incremental_sort = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT u.config_id,
           (SELECT d.next_attempt_at
            FROM deliveries d
            WHERE (d.config_id, d.next_attempt_at) >= (u.config_id, '-infinity'::timestamptz)
              AND (d.config_id, d.next_attempt_at) <= (u.config_id, 'infinity'::timestamptz)
              AND d.status = 'pending'
            ORDER BY d.config_id, d.next_attempt_at
            LIMIT 1)
    FROM unnest(config_ids) AS u (config_id);
END
$$;

-- The ready set's trigger of migration 0018, looking the next due times up in one statement
-- (configs_next_due) instead of one planned look-up per config: a claim of fifty configs,
-- one delivery each, paid fifty plannings here.
CREATE OR REPLACE FUNCTION keep_ready_configs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    sooner timestamptz[];
    later boolean[];
    later_ids text[];
    looked timestamptz[];
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
    later_ids := ARRAY(SELECT x.id FROM unnest(ids, later) AS x (id, moved) WHERE x.moved);
    -- Locked in config id order, then looked up with a snapshot taken after the locks (see
    -- migration 0018): the last to commit leaves the truth.
    PERFORM 1 FROM config_health WHERE config_id = ANY (ids) ORDER BY config_id FOR UPDATE;
    SELECT array_agg(n.next_due ORDER BY u.position) INTO looked
    FROM unnest(ids) WITH ORDINALITY AS u (id, position)
    LEFT JOIN configs_next_due(later_ids) n ON n.config_id = u.id;
    UPDATE config_health h
    SET next_due_at = CASE WHEN u.later THEN u.looked_up ELSE least(h.next_due_at, u.sooner) END
    FROM unnest(ids, sooner, later, looked) AS u (id, sooner, later, looked_up)
    WHERE h.config_id = u.id
      AND h.next_due_at IS DISTINCT FROM
          CASE WHEN u.later THEN u.looked_up ELSE least(h.next_due_at, u.sooner) END;
    RETURN NULL;
END
$$;

-- The claim's former per-config look-ups (one planning each) and walk.
DROP FUNCTION IF EXISTS config_due_deliveries(text, integer);
DROP FUNCTION IF EXISTS claimable_configs(integer, integer, double precision, double precision,
                                          integer, integer, text[], integer[]);

-- concurrently --
-- The ready set by tenant and turn: a tenant's configs in the claims' order, and its earliest.
CREATE INDEX CONCURRENTLY IF NOT EXISTS config_health_tenant_turns
    ON config_health (tenant_id, config_turn_at(next_due_at, circuit, next_probe_at,
                                                next_send_at, served_at))
    WHERE next_due_at IS NOT NULL AND paused_at IS NULL AND circuit <> 'half_open';
-- The tenants with something pending, by turn; those held by their rate, by when it allows.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tenant_turns_order
    ON tenant_turns (tenant_turn_at(ready_at, next_send_at, served_at))
    WHERE ready_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS tenant_turns_throttled
    ON tenant_turns (next_send_at) WHERE ready_at IS NOT NULL AND next_send_at IS NOT NULL;
-- The configs' turns across tenants were the former claim's walk.
DROP INDEX CONCURRENTLY IF EXISTS config_health_turns;
