from pathlib import Path

import pytest

from db.vocabulary import IN_HAND, REPLAYABLE, Status
from graphql_schema.types import DeliveryStatus


def test_the_api_enum_has_the_statuses_by_name_and_value():
    assert [(s.name, s.value) for s in DeliveryStatus] == [(s.name, s.value) for s in Status]
    assert all(DeliveryStatus(status) == status for status in Status)


def test_a_status_is_its_column_value():
    assert Status("failed") is Status.FAILED
    assert f"{Status.PENDING}" == "pending" == Status.PENDING
    assert {"pending": 1}[Status.PENDING] == 1


def test_the_groups_of_statuses():
    assert set(REPLAYABLE) == {Status.FAILED, Status.PENDING}
    assert set(IN_HAND) == {Status.PENDING, Status.DELIVERING}


# What no import checker can say (the imports themselves are import-linter's contracts in
# pyproject.toml): statuses are `Status` members in Python, never spelled (SQL files spell
# them, as the column's check constraint does).
ROOT = Path(__file__).resolve().parents[2]
STATUS_WORDS = tuple(f"{quote}{status}{quote}" for status in
                     (Status.PENDING, Status.DELIVERING, Status.SUCCEEDED, Status.CANCELLED)
                     for quote in "'\"")
NOT_STATUSES = {  # where these words are not delivery statuses
    "db/vocabulary.py": "it defines them",
    "service/policy/classify.py": "its verdicts ('succeeded', 'retry', 'fail')",
    "service/commands/stats.py": "the API's JSON field names",
}


@pytest.mark.parametrize("path", [path for package in ("service", "graphql_schema", "db")
                                  for path in sorted((ROOT / package).rglob("*.py"))
                                  if path.relative_to(ROOT).as_posix() not in NOT_STATUSES],
                         ids=lambda path: path.relative_to(ROOT).as_posix())
def test_delivery_statuses_are_named_through_the_vocabulary_not_spelled(path):
    text = path.read_text()
    assert not [word for word in STATUS_WORDS if word in text]
