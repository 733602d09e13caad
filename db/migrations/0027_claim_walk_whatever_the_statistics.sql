-- The claim's walk of the ready set, planned the one way that stays cheap at any number of
-- configs: through the turns index in turn order, stopping after `lim` configs.
--
-- Written inside the claim statement, the walk was planned from PostgreSQL's estimate of the
-- ready set's size, and that estimate comes from statistics that lag behind it: a
-- config_health never analysed yet (configs just created, through the API or otherwise), or
-- analysed while few configs had anything due, makes the planner expect a handful of ready
-- configs. It then read the whole ready set and sorted it instead of walking it in order:
-- beside 10,000 ready configs a claim took 45 ms instead of a fraction of one, until
-- autovacuum analysed the table again. Here bitmap scans are off for the walk alone, so the
-- ordered index walk is the cheaper plan whatever the estimate; as a PL/pgSQL function its
-- plan is made once per session, as the prepared claim's is.
--
-- Configs that may send now and have something due, the longest-unserved first, with how
-- many deliveries each may take (`quota`); the arguments are the claim's.
CREATE OR REPLACE FUNCTION claimable_configs(lim integer, cap integer, ramp double precision,
                                             rate_burst double precision, capacity integer,
                                             hold integer, room_ids text[], rooms integer[])
RETURNS TABLE (config_id text, circuit text, rate_per_second double precision,
               max_in_flight integer, version bigint, held_now double precision,
               quota integer)
LANGUAGE plpgsql STABLE ROWS 10
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT h.config_id, h.circuit, h.rate_per_second, h.max_in_flight, h.version,
           config_held_seconds(h) AS held_now,
           greatest(0, least(
               lim,
               config_cap(h, cap, ramp) - h.in_flight,
               r.room,  -- the worker's own bound
               CASE WHEN h.circuit = 'open' THEN 1 END,  -- a probe is one delivery
               CASE WHEN h.rate_per_second IS NOT NULL  -- the rate's burst
                    THEN greatest(1, floor(h.rate_per_second * rate_burst))::integer END
           )) AS quota
    FROM config_health h
    -- What the worker may still take of the config: `hold` shares less what it holds
    -- (given for the configs it holds; a share is the config's maxInFlight or the default).
    CROSS JOIN LATERAL (
        SELECT coalesce((SELECT w.room
                         FROM unnest(room_ids, rooms) AS w (id, room)
                         WHERE w.id = h.config_id),
                        hold * CASE WHEN h.max_in_flight IS NULL THEN cap
                                    ELSE least(h.max_in_flight, capacity) END) AS room
    ) r
    -- The ready set, walked in turn order through its index: configs a claim could take
    -- something of now (due work, the rate's slot, an open circuit's probe time), the one
    -- waiting longest since it was served or became ready first. The walk stops after
    -- `lim` configs: idle, paused and not-yet-due configs are never read, and the ready
    -- ones behind the first `lim` neither.
    WHERE config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                         h.served_at) <= now()
      AND config_ready_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at) <= now()
      AND h.next_due_at IS NOT NULL AND h.paused_at IS NULL AND h.circuit <> 'half_open'
      AND h.in_flight < config_cap(h, cap, ramp)
      AND r.room > 0
    ORDER BY config_turn_at(h.next_due_at, h.circuit, h.next_probe_at, h.next_send_at,
                            h.served_at)
    LIMIT lim;
END
$$;
