-- The backoff chosen after the latest failed attempt of the current retry generation (before
-- any Retry-After stretched it), null when the delivery is not waiting to retry. Decorrelated
-- jitter grows the next delay from it (the previous delay; see docs/delivery.md).
ALTER TABLE deliveries ADD COLUMN last_backoff_seconds double precision;
