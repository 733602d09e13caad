-- What a Kafka producer sends beside the value: the message key (recorded, never required)
-- and the W3C trace context of its `traceparent`/`tracestate` headers, which every attempt
-- of the event's deliveries (retries and replays included) continues. And the partitions a
-- consumer cannot decode (an unknown codec, a corrupt batch): held, never skipped, shown to
-- operators until the partition is read again.
-- Adding nullable columns only touches the catalog; waiting at most 400 ms for the table
-- lock (the migration gives way and is tried again) keeps ingestion and claims from waiting
-- behind it for long.
SET LOCAL lock_timeout = '400ms';

ALTER TABLE events
    ADD COLUMN message_key bytea,
    ADD COLUMN trace_parent text,
    ADD COLUMN trace_state text;

CREATE TABLE kafka_stalled_partitions (
    group_id text NOT NULL,
    topic text NOT NULL,
    partition integer NOT NULL,
    "offset" bigint NOT NULL,
    reason text NOT NULL,
    worker text NOT NULL,
    since timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, topic, partition)
);
