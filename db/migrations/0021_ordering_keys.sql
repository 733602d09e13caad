-- An event's ordering key: the Kafka message key as UTF-8 text, or `orderingKey` of
-- publishEvent. Copied to each of its deliveries, where the listings filter on it (an
-- operator looks for "everything of order 1042") and where ordered delivery takes turns by it.
ALTER TABLE events ADD COLUMN IF NOT EXISTS ordering_key text;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS ordering_key text;

-- concurrently --
-- The deliveries of one key, newest first, as every other filter's (filter, created_at, id)
-- index serves its listings; only deliveries that have a key are in it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_by_ordering_key
    ON deliveries (ordering_key, created_at, id) WHERE ordering_key IS NOT NULL;
