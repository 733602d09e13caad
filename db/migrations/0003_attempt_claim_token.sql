-- The claim that made each attempt. A claim makes one request, so its result is stored once:
-- recording it again (after a commit whose answer was lost with the connection) adds nothing.
-- Attempts of the former model and of backfills have none.
ALTER TABLE delivery_attempts ADD COLUMN claim_token uuid;
