"""The committed `graphql_schema/schema.graphql` is the schema the code serves."""

from __future__ import annotations

from graphql_schema.schema import SCHEMA_FILE, sdl


def test_the_committed_schema_file_is_current():
    assert SCHEMA_FILE.read_text() == sdl(), (
        "graphql_schema/schema.graphql is stale; regenerate it with "
        "`python -m graphql_schema.schema` and commit the result"
    )


def test_the_schema_names_of_the_contract():
    text = SCHEMA_FILE.read_text()
    for name in ("deliveries(filter: DeliveryFilter = null, first: Int = 100, after: String",
                 "delivery(id: ID!): Delivery",
                 "configs(filter: ConfigFilter = null, first: Int = 100, after: String = null, "
                 "last: Int = null, before: String = null",
                 "config(id: ID!): Config", "stats: Stats!", "rejectedEvents(first: Int = 100",
                 "createConfig(input: CreateConfigInput!): ConfigWithSecret!",
                 "publishEvent(input: PublishEventInput!)",
                 "replayDelivery(id: ID!): ReplayResult!",
                 "rotateConfigSecret(id: ID!, secret: String = null, graceSeconds: Int = null)"
                 ": ConfigWithSecret!"):
        assert name in text, name
    assert "secret" not in text.split("type Config {")[1].split("}")[0]
    assert "payload" not in text.split("type DeliverySummary {")[1].split("}")[0]
