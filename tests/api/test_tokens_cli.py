"""`webhooks tokens create|list|revoke` and what the API makes of the tokens it mints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from db import tokens
from service.cli import main
from tests.api.conftest import Api
from tests.helpers import PATIENCE

ROOT = Path(__file__).resolve().parents[2]
STATS = "{ stats { queueDepth } }"


def run(capsys, database_url, *argv):
    code = main(["tokens", "--database-url", database_url, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_create_prints_the_token_alone_on_stdout(database_url, pool, client):
    result = subprocess.run(
        [sys.executable, "-m", "service", "tokens", "create", "--role", "operator",
         "--name", "deploy-bot"],
        cwd=ROOT, env={**os.environ, "DATABASE_URL": database_url}, capture_output=True,
        text=True, timeout=PATIENCE,
    )
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert result.stdout == token + "\n"
    assert token.startswith("whk_") and len(token) > 40
    with pool.transaction() as cursor:
        cursor.execute("SELECT token_hash FROM api_tokens WHERE name = 'deploy-bot'")
        (stored,) = cursor.fetchone()
    assert stored == tokens.digest(token) and token not in stored
    assert Api(client, token).data(STATS) == {"stats": {"queueDepth": 0}}


def test_list_shows_names_and_roles_never_tokens(capsys, database_url):
    _, operator, _ = run(capsys, database_url, "create", "--role", "operator", "--name", "ops")
    _, viewer, _ = run(capsys, database_url, "create", "--role", "viewer", "--name", "board")
    code, out, _ = run(capsys, database_url, "list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["ops", "operator"], ["board", "viewer"]]
    assert operator.strip() not in out and viewer.strip() not in out


def test_a_viewer_token_from_the_cli_may_query_but_not_mutate(capsys, database_url, client):
    _, out, _ = run(capsys, database_url, "create", "--role", "viewer", "--name", "board")
    viewer = Api(client, out.strip())
    assert viewer.data(STATS) == {"stats": {"queueDepth": 0}}
    assert viewer.code('mutation { publishEvent(input: {type: "t", payload: 1}) { eventId } }') \
        == "FORBIDDEN"


def test_revoke_ends_a_token_at_once(capsys, database_url, client):
    _, out, _ = run(capsys, database_url, "create", "--role", "operator", "--name", "temp")
    api = Api(client, out.strip())
    assert api.data(STATS)
    code, out, err = run(capsys, database_url, "revoke", "temp")
    assert code == 0 and out == "" and "revoked temp" in err
    assert api.code(STATS) == "UNAUTHENTICATED"
    code, _, _ = run(capsys, database_url, "list")
    assert capsys.readouterr().out == ""


def test_a_token_given_a_lifetime_stops_working_when_it_ends(capsys, database_url, client,
                                                             pool):
    _, out, _ = run(capsys, database_url, "create", "--role", "viewer", "--name", "contractor",
                    "--expires-in", "30d")
    api = Api(client, out.strip())
    assert api.data(STATS)
    _, out, _ = run(capsys, database_url, "list")
    assert "contractor\tviewer" in out and "\texpires " in out
    with pool.transaction() as cursor:  # the thirty days go by
        cursor.execute("UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                       "WHERE name = 'contractor'")
    assert api.code(STATS) == "UNAUTHENTICATED"
    _, out, _ = run(capsys, database_url, "list")
    assert "\texpired " in out  # listed until revoked: its name stays taken
    assert run(capsys, database_url, "revoke", "contractor")[0] == 0


def test_a_malformed_or_absurd_lifetime_is_bad_usage(capsys, database_url):
    for value in ("soon", "0s", "-1h", "5000d"):
        code, out, err = run(capsys, database_url, "create", "--role", "viewer", "--name", "x",
                             f"--expires-in={value}")
        assert (code, out) == (2, ""), value
        assert "expires" in err, value


def test_revoking_an_unknown_name_fails(capsys, database_url):
    code, out, err = run(capsys, database_url, "revoke", "nobody")
    assert code == 1 and out == "" and "nobody" in err


def test_a_name_in_use_is_refused_until_revoked(capsys, database_url):
    assert run(capsys, database_url, "create", "--role", "viewer", "--name", "x")[0] == 0
    code, out, err = run(capsys, database_url, "create", "--role", "viewer", "--name", "x")
    assert code == 2 and out == "" and "revoke it first" in err
    assert run(capsys, database_url, "revoke", "x")[0] == 0
    assert run(capsys, database_url, "create", "--role", "operator", "--name", "x")[0] == 0


def test_settings_flags_work_before_and_after_the_action(capsys, database_url):
    code, _, _ = run(capsys, database_url, "create", "--role", "viewer", "--name", "before")
    assert code == 0
    assert main(["tokens", "create", "--role", "viewer", "--name", "after",
                 "--database-url", database_url]) == 0
    assert main(["tokens", "list", "--database-url", database_url]) == 0
    out, _ = capsys.readouterr()
    assert "before\tviewer" in out and "after\tviewer" in out


def test_creating_and_revoking_a_token_leave_audit_lines_without_the_token(capsys,
                                                                            database_url,
                                                                            tmp_path):
    trail = ["--audit-log", str(tmp_path / "audit.log")]
    assert main(["tokens", "create", "--role", "viewer", "--name", "audited",
                 "--database-url", database_url, *trail]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert main(["tokens", "create", "--role", "viewer", "--name", "audited",
                 "--database-url", database_url, *trail]) == 2
    assert main(["tokens", "revoke", "audited", "--database-url", database_url, *trail]) == 0
    err += capsys.readouterr().err
    assert "{" not in err
    err = (tmp_path / "audit.log").read_text()
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(line["audit"], line["ids"]["token_name"], line["result"]) for line in lines] == [
        ("tokens create", "audited", "ok"), ("tokens create", "audited", "BAD_USER_INPUT"),
        ("tokens revoke", "audited", "ok")]
    assert all(line["actor"].startswith("cli:") for line in lines)
    assert token not in err
