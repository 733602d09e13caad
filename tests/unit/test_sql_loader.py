import pytest

from db.sql import QUERIES, parse


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
