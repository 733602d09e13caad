-- API tokens may expire: a token minted for an incident or a contractor stops working on its
-- own. Null: never expires (every token made before this migration).
-- Adding a nullable column only touches the catalog; the migration gives way to a busy table
-- lock after 400 ms and is tried again.
SET LOCAL lock_timeout = '400ms';

ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
