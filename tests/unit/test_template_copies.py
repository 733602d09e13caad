"""The suite's template copies: each test takes the copy made while the test before ran; a
copy that could not be made fails only the test that wanted it; a failed drop fails the
session."""

import psycopg2
import pytest

from tests.conftest import TemplateCopies


def _maker(outcomes):
    made = []

    def create(template):
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        made.append((template, outcome))
        return outcome

    return create, made


def test_each_take_gets_the_copy_made_ahead_and_a_failed_one_fails_that_take_alone():
    create, made = _maker(["copy_1", psycopg2.ProgrammingError("no template"), "copy_3"])
    copies = TemplateCopies("dsn", "template", create)
    assert copies.take() == "copy_1"
    with pytest.raises(psycopg2.ProgrammingError, match="no template"):
        copies.take()
    assert copies.take() == "copy_3"
    assert made == [("template", "copy_1"), ("template", "copy_3")]


class _Refused(Exception):
    pass


def test_every_copy_is_dropped_and_a_failed_drop_fails_the_session(monkeypatch):
    dropped = []

    def sql(dsn, statement, autocommit):
        if "copy_1" in statement:
            raise _Refused("database is being accessed by other users")
        dropped.append(statement)

    monkeypatch.setattr("tests.conftest.sql", sql)
    create, _ = _maker(["copy_1", "copy_2", "copy_3"])
    copies = TemplateCopies("dsn", "template", create)
    copies.drop(copies.take())
    copies.drop(copies.take())
    with pytest.raises(_Refused, match="other users"):
        copies.close()
    assert dropped == ["DROP DATABASE IF EXISTS copy_2 WITH (FORCE)"]  # the other one went
