-- Every rotated-out secret keeps signing until its own grace ends: `previous_secrets` is a
-- JSON array of {"secret", "expires_at"}, newest first, replacing the single previous secret
-- that a second rotation within the grace overwrote (cutting off the oldest at once).
--
-- The old columns stay for now, unused by this release: processes of the release before keep
-- running while `release` migrates, and they still read them. A later release drops them.
ALTER TABLE configs ADD COLUMN previous_secrets jsonb NOT NULL DEFAULT '[]'
    CONSTRAINT configs_previous_secrets_is_array CHECK (jsonb_typeof(previous_secrets) = 'array');
UPDATE configs
SET previous_secrets = jsonb_build_array(
        jsonb_build_object('secret', previous_secret, 'expires_at', previous_secret_expires_at))
WHERE previous_secret IS NOT NULL AND previous_secret_expires_at > now();
COMMENT ON COLUMN configs.previous_secret IS 'unused since migration 0004; to be dropped';
COMMENT ON COLUMN configs.previous_secret_expires_at IS 'unused since migration 0004; to be dropped';
