"""The schema of the former attempts model, for upgrade tests."""

FORMER_SCHEMA = [
    "CREATE TABLE configs (id varchar PRIMARY KEY, endpoint varchar NOT NULL,"
    " secret varchar NOT NULL, event_types varchar[], active boolean NOT NULL DEFAULT true,"
    " name varchar, created_at timestamp NOT NULL DEFAULT now(),"
    " updated_at timestamp NOT NULL DEFAULT now())",
    "CREATE TABLE attempts (id varchar PRIMARY KEY, webhook_id varchar NOT NULL,"
    " created_at timestamp NOT NULL, updated_at timestamp NOT NULL, config jsonb,"
    " payload text, status_code integer, retry_attempt integer, status varchar,"
    " next_retry_after timestamp)",
]
