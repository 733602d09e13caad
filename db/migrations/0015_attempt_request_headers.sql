-- The request headers each attempt sent that no other column holds, as a JSON object of
-- name -> value: webhook-timestamp, webhook-signature and the trace context (traceparent,
-- tracestate). Left out to keep the rows small: those every request carries unchanged
-- (Content-Type, User-Agent, Accept-Encoding) and those the rows hold already (webhook-id on
-- the delivery; webhook-attempt and webhook-replay-generation on the attempt), which the API
-- puts back. Null for the attempts recorded before this migration.
-- Adding a nullable column without a default only touches the catalog (no table rewrite);
-- the migration gives way to a busy table lock after 400 ms and is tried again.
SET LOCAL lock_timeout = '400ms';

ALTER TABLE delivery_attempts ADD COLUMN IF NOT EXISTS request_headers jsonb;
