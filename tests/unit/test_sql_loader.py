import pytest

from db.pool import numbered
from db.sql import QUERIES, expand, parse


def test_parse_reads_named_statements():
    text = "-- one --\n-- First.\nSELECT 1\n\n-- two --\n-- Second.\nSELECT 2;\n"
    assert parse(text) == {"one": "SELECT 1", "two": "SELECT 2;"}


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1\n-- one --\n-- d\nSELECT 1",
        "-- one --\nSELECT 1",
        "-- one --\n-- d\n",
        "-- one --\n-- d\nSELECT 1\n-- one --\n-- d\nSELECT 2",
    ],
)
def test_parse_rejects_malformed_files(text):
    with pytest.raises(ValueError):
        parse(text)


def test_every_shipped_statement_is_loaded():
    assert "claim_due_deliveries" in QUERIES
    assert "ingest_events" in QUERIES
    assert all(statement.strip() for statement in QUERIES.values())


def test_expand_replaces_includes_by_the_named_statement():
    statements = {"cond": "a = 1", "query": "SELECT 1 WHERE /* include cond */ AND b"}
    assert expand(statements)["query"] == "SELECT 1 WHERE a = 1 AND b"


def test_an_included_statement_may_include_another():
    statements = {"inner": "x", "cond": "(/* include inner */)", "query": "/* include cond */"}
    assert expand(statements)["query"] == "(x)"


@pytest.mark.parametrize("statements", [
    {"query": "SELECT /* include missing */"},
    {"query": "SELECT /* include query */"},
    {"a": "/* include b */", "b": "/* include a */", "query": "/* include a */"},
])
def test_expand_rejects_unknown_and_circular_includes(statements):
    with pytest.raises(ValueError):
        expand(statements)


def test_both_replay_statements_run_the_one_replay_transition():
    for name in ("replay_delivery", "replay_listed_deliveries"):
        assert QUERIES["replay_transition"] in QUERIES[name]


def test_a_prepared_statement_numbers_its_placeholders_with_their_casts():
    text, parameters = numbered("SELECT %(a)s::integer + %(b)s::integer, %(a)s::integer, '%%'")
    assert text == "SELECT $1::integer + $2::integer, $1::integer, '%'"
    assert parameters == [("a", "integer"), ("b", "integer")]
    assert numbered("SELECT %(ids)s::bigint[]")[1] == [("ids", "bigint[]")]


@pytest.mark.parametrize("statement, problem", [
    ("SELECT %(a)s", "needs a cast"),
    ("SELECT %(a)s::integer, %(a)s::text", "cast to integer and to text"),
])
def test_a_prepared_statement_refuses_a_guessed_or_ambiguous_type(statement, problem):
    with pytest.raises(ValueError, match=problem):
        numbered(statement)


@pytest.mark.parametrize("name", ["claim_due_deliveries", "record_and_settle",
                                  "settle_config_health"])
def test_the_statements_run_prepared_cast_every_parameter(name):
    assert numbered(QUERIES[name])[1]  # raises on a placeholder without its cast
