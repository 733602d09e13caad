"""The suite's template copies: a copy whose connection the server ended is made again once,
loudly; any other failure fails the test that wanted the copy. A drop that lost its connection
is left to the database factory, loudly; any other failed drop fails the session."""

import warnings

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


def test_a_copy_that_lost_its_connection_is_made_again_with_the_servers_log(tmp_path):
    log = tmp_path / "postgres.log"
    log.write_text("LOG:  first line\nLOG:  server process (PID 7) was terminated\n")
    create, made = _maker([psycopg2.OperationalError("server closed the connection"),
                           "copy_1", "copy_2"])
    copies = TemplateCopies("dsn", "template", create, log)
    with pytest.warns(UserWarning, match="(?s)lost its connection.*PID 7\\) was terminated"):
        assert copies.take() == "copy_1"
    assert copies.take() == "copy_2"  # the spare made behind the retried one
    assert made == [("template", "copy_1"), ("template", "copy_2")]


@pytest.mark.parametrize("failures", [
    [psycopg2.OperationalError("closed"), psycopg2.OperationalError("closed again")],
    [psycopg2.ProgrammingError("template does not exist")],
])
def test_a_second_loss_or_any_other_error_fails_the_take(failures):
    create, _ = _maker([*failures, "never"])
    copies = TemplateCopies("dsn", "template", create)
    with pytest.raises(type(failures[-1]), match=str(failures[-1])), \
            warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        copies.take()
    assert len(recorded) == len(failures) - 1  # a warning for the retried loss only


class _Unreachable(Exception):
    pass


@pytest.mark.parametrize("error, verdict", [
    (psycopg2.OperationalError("server closed the connection"), "warned"),
    (_Unreachable("disk full"), "raised"),
])
def test_a_failed_drop_is_warned_about_if_its_connection_was_lost_else_raised(
        monkeypatch, tmp_path, error, verdict):
    log = tmp_path / "postgres.log"
    log.write_text("LOG:  checkpoint complete\n")
    dropped = []

    def sql(dsn, statement, autocommit):
        if "copy_1" in statement:
            raise error
        dropped.append(statement)

    monkeypatch.setattr("tests.conftest.sql", sql)
    create, _ = _maker(["copy_1", "copy_2", "copy_3"])
    copies = TemplateCopies("dsn", "template", create, log)
    copies.drop(copies.take())
    copies.drop(copies.take())
    if verdict == "warned":
        with pytest.warns(UserWarning, match="(?s)drop lost its connection.*checkpoint"):
            copies.close()
    else:
        with pytest.raises(_Unreachable, match="disk full"):
            copies.close()
    assert dropped == ["DROP DATABASE IF EXISTS copy_2 WITH (FORCE)"]  # the other one went
