-- An event is known by its tenant and its id: the unique index the previous migration built
-- without blocking writes becomes the key, and a delivery refers to its event by both. Only
-- catalogue changes under a brief lock (the key's columns are NOT NULL already, so nothing is
-- scanned); the reference to the event is checked for the rows already there after this
-- commits, without blocking writes. Done once: a run interrupted during the check finds the
-- new key in place and checks again. Both tables are locked first, events before deliveries as
-- an ingest takes them, so that the statements below wait for nothing while they hold either.
LOCK TABLE events, deliveries IN ACCESS EXCLUSIVE MODE;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'deliveries_event_fkey') THEN
        ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_event_id_fkey;
        ALTER TABLE events DROP CONSTRAINT IF EXISTS events_pkey;
        ALTER TABLE events ALTER COLUMN id SET NOT NULL;
        ALTER TABLE events ADD CONSTRAINT events_pkey
            PRIMARY KEY USING INDEX events_tenant_id_id;
        ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_fkey
            FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id) NOT VALID;
    END IF;
END
$$;

-- concurrently --
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_event_fkey;
