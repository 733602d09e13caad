-- insert_rejected_events --
-- Quarantine broker messages that cannot become events; a redelivered message is stored once; return the positions stored now
INSERT INTO rejected_events (topic, partition, "offset", reason, raw)
SELECT * FROM unnest(%(topics)s::text[], %(partitions)s::integer[], %(offsets)s::bigint[],
                     %(reasons)s::text[], %(raws)s::bytea[])
ON CONFLICT (topic, partition, "offset") DO NOTHING
RETURNING topic, partition, "offset"

-- list_rejected_events --
-- Page through rejected broker messages, newest first, after an id cursor
SELECT id, topic, partition, "offset", reason, raw, created_at
FROM rejected_events
WHERE %(after_id)s::bigint IS NULL OR id < %(after_id)s::bigint
ORDER BY id DESC
LIMIT %(limit)s

-- count_rejected_events --
-- Count rejected broker messages
SELECT count(*) FROM rejected_events
