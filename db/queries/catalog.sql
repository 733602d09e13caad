-- event_type_columns --
-- An event type as every statement returns it, from event_types as `t`, with its current schema (included by the statements below)
t.name, t.description, t.group_name, t.examples, t.schema_version, t.deprecated_at,
t.deprecated_reason, t.created_at, t.updated_at,
(SELECT s.schema FROM event_type_schemas s
 WHERE s.name = t.name AND s.version = t.schema_version) AS schema

-- insert_event_type --
-- Add an event type to the catalog, with its schema as version 1 when one is given; nothing when the name is taken
WITH added AS (
    INSERT INTO event_types (name, description, group_name, examples, schema_version)
    VALUES (%(name)s, %(description)s, %(group_name)s, %(examples)s::jsonb,
            CASE WHEN %(schema)s::jsonb IS NULL THEN 0 ELSE 1 END)
    ON CONFLICT (name) DO NOTHING
    RETURNING name
),
schema AS (
    INSERT INTO event_type_schemas (name, version, schema)
    SELECT name, 1, %(schema)s::jsonb FROM added WHERE %(schema)s::jsonb IS NOT NULL
)
SELECT name FROM added

-- update_event_type --
-- Change an event type's description, group or examples where given; a new schema becomes the next version (the earlier ones kept), a null one leaves the type without a schema; return its name, or nothing when it is not in the catalog
WITH current AS (
    SELECT name FROM event_types WHERE name = %(name)s FOR UPDATE
),
next AS (
    SELECT coalesce(max(s.version), 0) + 1 AS version
    FROM event_type_schemas s WHERE s.name = %(name)s
),
versioned AS (
    INSERT INTO event_type_schemas (name, version, schema)
    SELECT c.name, n.version, %(schema)s::jsonb
    FROM current c, next n
    WHERE %(set_schema)s AND %(schema)s::jsonb IS NOT NULL
    RETURNING version
)
UPDATE event_types t
SET description = coalesce(%(description)s, t.description),
    group_name = CASE WHEN %(set_group)s THEN %(group_name)s ELSE t.group_name END,
    examples = coalesce(%(examples)s::jsonb, t.examples),
    schema_version = CASE WHEN NOT %(set_schema)s THEN t.schema_version
                          ELSE coalesce((SELECT version FROM versioned), 0) END,
    updated_at = now()
FROM current c
WHERE t.name = c.name
RETURNING t.name

-- deprecate_event_type --
-- Mark an event type deprecated, saying why (it still delivers); return its name, or nothing when it is not in the catalog
UPDATE event_types
SET deprecated_at = coalesce(deprecated_at, now()), deprecated_reason = %(reason)s,
    updated_at = now()
WHERE name = %(name)s
RETURNING name

-- get_event_type --
-- Return one event type with its current schema
SELECT /* include event_type_columns */
FROM event_types t
WHERE t.name = %(name)s

-- event_type_schema --
-- Return one version of an event type's schema
SELECT schema FROM event_type_schemas WHERE name = %(name)s AND version = %(version)s

-- list_event_types --
-- Page through the catalog by name after a cursor: a piece of the name, a group, deprecated ones or not
SELECT /* include event_type_columns */
FROM event_types t
WHERE (%(pattern)s::text IS NULL OR lower(t.name) LIKE %(pattern)s::text)
  AND (%(group_name)s::text IS NULL OR t.group_name = %(group_name)s::text)
  AND (%(include_deprecated)s OR t.deprecated_at IS NULL)
  AND (%(after)s::text IS NULL OR t.name > %(after)s::text)
ORDER BY t.name
LIMIT %(limit)s

-- event_type_names --
-- Return every event type's name
SELECT name FROM event_types ORDER BY name

-- catalog_of_types --
-- Return the catalog's entries among the given types: the current schema version and its schema (as text), and whether deprecated
SELECT t.name, t.schema_version, t.deprecated_at IS NOT NULL AS deprecated, s.schema::text AS schema
FROM event_types t
LEFT JOIN event_type_schemas s ON s.name = t.name AND s.version = t.schema_version
WHERE t.name = ANY (%(types)s::text[])
