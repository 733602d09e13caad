-- insert_rejected_events --
-- Quarantine broker messages that cannot become events; a redelivered message is stored once; return the positions stored now
INSERT INTO rejected_events (topic, partition, "offset", reason, raw, message_key, headers,
                             tenant_uid)
SELECT * FROM unnest(%(topics)s::text[], %(partitions)s::integer[], %(offsets)s::bigint[],
                     %(reasons)s::text[], %(raws)s::bytea[], %(keys)s::bytea[],
                     %(headers)s::jsonb[], %(tenant_uids)s::text[])
ON CONFLICT (topic, partition, "offset") DO NOTHING
RETURNING topic, partition, "offset"

-- list_rejected_events --
-- Page through rejected broker messages, newest first, after an id cursor
SELECT id, topic, partition, "offset", reason, raw, created_at, message_key AS key, headers,
       tenant_uid, replayed_at
FROM rejected_events
WHERE %(after_id)s::bigint IS NULL OR id < %(after_id)s::bigint
ORDER BY id DESC
LIMIT %(limit)s

-- count_rejected_events --
-- Count rejected broker messages
SELECT count(*) FROM rejected_events

-- rejected_events_to_replay --
-- Lock up to `limit` rejected messages not yet ingested, oldest first: those of the given ids, or those that named a tenant that did not exist
SELECT id, topic, partition, "offset", reason, raw, created_at, message_key AS key, headers,
       tenant_uid, replayed_at
FROM rejected_events
WHERE replayed_at IS NULL
  AND (%(ids)s::bigint[] IS NULL OR id = ANY (%(ids)s::bigint[]))
  AND (%(tenant_uid)s::text IS NULL OR tenant_uid = %(tenant_uid)s::text)
ORDER BY id
LIMIT %(limit)s
FOR UPDATE

-- mark_rejected_events_replayed --
-- Note that the given rejected messages were ingested after all
UPDATE rejected_events SET replayed_at = now() WHERE id = ANY (%(ids)s::bigint[])
