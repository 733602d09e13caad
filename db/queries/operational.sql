-- point_operational_events --
-- Name the tenant, a live one, that hears operational events from now on; return its id, or nothing when no live tenant has the uid
WITH target AS (
    SELECT id FROM tenants WHERE uid = %(uid)s AND deleted_at IS NULL
)
INSERT INTO operational_tenant (tenant_id)
SELECT id FROM target
ON CONFLICT (only_row) DO UPDATE SET tenant_id = excluded.tenant_id
RETURNING tenant_id

-- stop_operational_events --
-- Announce nothing from now on: forget the operational tenant and drop the announcements not yet published
WITH forgotten AS (
    DELETE FROM operational_tenant
)
DELETE FROM operational_events

-- take_operational_events --
-- Take the oldest announcements that no other relay holds, up to `limit`, with their tenant's uid and their config's name: deleted in the caller's transaction, which publishes them (platform-wide: a worker's relay serves every tenant)
WITH taken AS (
    DELETE FROM operational_events o
    WHERE o.position IN (SELECT position FROM operational_events
                         ORDER BY position
                         LIMIT %(limit)s
                         FOR UPDATE SKIP LOCKED)
    RETURNING o.*
)
SELECT t.position, t.event_id, t.type, t.config_id, t.reason, t.actor, t.delivery,
       t.occurred_at, tenant.uid AS tenant_uid, config.name AS config_name
FROM taken t
JOIN tenants tenant ON tenant.id = t.tenant_id
LEFT JOIN configs config ON config.id = t.config_id
ORDER BY t.position
