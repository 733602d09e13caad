-- The breaker's run of consecutive failures is counted in the order the attempts were sent,
-- not the order their results came back: a success resets the run for every failure sent
-- before it. Recorded in completion order, a flaky endpoint's slow failures (timeouts) pile
-- up behind its fast successes, and at high concurrency a run of twenty is chance.
-- Adding a nullable column only touches the catalog; the migration gives way to a busy row
-- lock after 400 ms and is tried again.
SET LOCAL lock_timeout = '400ms';

ALTER TABLE config_health ADD COLUMN IF NOT EXISTS last_success_sent_at timestamptz;
