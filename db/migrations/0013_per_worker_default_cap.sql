-- A config without its own maxInFlight has no fleet-wide cap any more: the default,
-- WEBHOOKS_ENDPOINT_CONCURRENCY, bounds how many requests of one config each worker sends at
-- once, and the worker enforces it itself (it claims no more of a config whose sends are at
-- that bound). Counted fleet-wide, the default held every config to its claimed-but-not-yet-
-- recorded attempts: with claims and records each a durable commit, half a worker's
-- concurrency halved the throughput of a single fast endpoint.
-- The ramp after a resume or a closed circuit is still fleet-wide: the cap grows from 1 to the
-- config's maxInFlight, or to the default when it has none, over the ramp; after the ramp,
-- only a maxInFlight bounds the config across workers.
CREATE OR REPLACE FUNCTION config_cap(health config_health, default_cap integer,
                                      ramp_seconds double precision)
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN health.ramp_started_at > now() - make_interval(secs => ramp_seconds)
        THEN greatest(1, ceil(coalesce(health.max_in_flight, default_cap)
                              * extract(epoch FROM now() - health.ramp_started_at)
                              / ramp_seconds))::integer
        ELSE coalesce(health.max_in_flight, 2147483647)
    END
$$;
