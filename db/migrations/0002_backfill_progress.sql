-- Progress of `webhooks backfill-deliveries`, so an interrupted upgrade resumes where it stopped.
CREATE TABLE backfill_progress (
    name text PRIMARY KEY,
    last_key text NOT NULL DEFAULT '',
    counts jsonb NOT NULL DEFAULT '{}',
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
