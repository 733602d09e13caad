-- record_stalled_partitions --
-- Record partitions a consumer holds because it cannot decode their next batch; a partition already recorded takes the new worker, offset and reason
INSERT INTO kafka_stalled_partitions (group_id, topic, partition, "offset", reason, worker)
SELECT %(group_id)s, * FROM unnest(%(topics)s::text[], %(partitions)s::integer[],
                                   %(offsets)s::bigint[], %(reasons)s::text[],
                                   %(workers)s::text[])
ON CONFLICT (group_id, topic, partition) DO UPDATE
SET "offset" = excluded."offset", reason = excluded.reason, worker = excluded.worker,
    since = CASE WHEN kafka_stalled_partitions."offset" = excluded."offset"
                 THEN kafka_stalled_partitions.since ELSE now() END

-- clear_stalled_partitions --
-- Forget the stalls of a group's partitions that a worker (re)reads now, except those it still holds
DELETE FROM kafka_stalled_partitions
WHERE group_id = %(group_id)s
  AND (topic, partition) IN (SELECT * FROM unnest(%(topics)s::text[], %(partitions)s::integer[]))
  AND (topic, partition) NOT IN (SELECT * FROM unnest(%(held_topics)s::text[],
                                                      %(held_partitions)s::integer[]))

-- list_stalled_partitions --
-- Return every partition a consumer holds because it cannot decode its next batch, oldest first
SELECT group_id, topic, partition, "offset", reason, worker, since
FROM kafka_stalled_partitions
ORDER BY since, group_id, topic, partition
