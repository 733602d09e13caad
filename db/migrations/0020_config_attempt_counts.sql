-- Each config's attempts and successes in five-minute periods, counted by the statement that
-- records the attempts, in its transaction: exact success rates for any config, however
-- quiet beside busy ones, and the configs failing most in the last hour, at any number of
-- configs and any depth of history, without reading attempts.
CREATE TABLE IF NOT EXISTS config_attempt_counts (
    config_id text NOT NULL,
    period_start timestamptz NOT NULL,
    attempts integer NOT NULL,
    succeeded integer NOT NULL,
    PRIMARY KEY (config_id, period_start)
);

-- The periods with a failure, by time: the configs failing now are found without reading the
-- periods of every config that only succeeded.
CREATE INDEX IF NOT EXISTS config_attempt_counts_failing
    ON config_attempt_counts (period_start) WHERE succeeded < attempts;

-- The period an attempt recorded at `moment` is counted in. One rule for the writer and the
-- readers.
CREATE OR REPLACE FUNCTION attempt_period(moment timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT date_bin(interval '5 minutes', moment, timestamptz '2000-01-01 00:00:00+00')
$$;

-- Their age, for retention (rows arrive in time order: a block range index is enough).
CREATE INDEX IF NOT EXISTS config_attempt_counts_periods
    ON config_attempt_counts USING brin (period_start);
