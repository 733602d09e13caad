"""The on-call commands: deliveries list|show, replay, stats, configs list; text, --json and
exit codes, on a real database through the API's own rules."""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import os
import pty
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from db import configs, health, tenants
from db.scope import PLATFORM
from graphql_schema.errors import BAD_USER_INPUT
from service.cli import main
from service.commands.local_api import ApiFailure, LocalApi
from tests.helpers import PATIENCE


def run(capsys, database_url, *argv):
    code = main([*argv, "--database-url", database_url])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def staged(make):
    """Two configs: `orders` with two failed deliveries and a pending one, `users` with one
    succeeded delivery."""
    orders = make.config(name="orders")
    users = make.config(name="users", event_types=["user.created"])
    failed = [make.delivery(orders, status="failed", next_attempt_at=None, last_status_code=500)
              for _ in range(2)]
    pending = make.delivery(orders)
    done = make.delivery(users, status="succeeded", next_attempt_at=None, last_status_code=200)
    return {"orders": orders, "users": users, "failed": failed, "pending": pending,
            "done": done}


def test_deliveries_list_filters_and_prints_text_or_json(capsys, database_url, staged):
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--status", "failed")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "HELD", "BY", "EVENT", "TYPE", "TENANT",
                                "CONFIG", "ATTEMPTS", "CODE", "LAST", "ERROR", "CREATED"]
    assert [line.split()[0] for line in lines[1:3]] == [str(i) for i in reversed(staged["failed"])]
    assert "orders" in lines[1] and lines[-1] == "2 shown of 2 matching"
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--json",
                       "--config", staged["users"].id, "--status-code", "200")
    assert code == 0
    data = json.loads(out)
    assert [edge["node"]["id"] for edge in data["edges"]] == [str(staged["done"])]
    assert data["totalCount"] == 1


def listed(out: str) -> list[str]:
    """Return the ids of a text listing's rows."""
    return [line.split()[0] for line in out.splitlines()[1:-1]]


def test_deliveries_list_due_sorts_pending_work_by_next_attempt(capsys, database_url, staged,
                                                                make):
    later = make.delivery(staged["orders"], next_attempt_at=datetime.now(UTC) + timedelta(hours=2))
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--due")
    assert code == 0
    header, first, second = out.splitlines()[:3]
    assert header.split()[-2:] == ["NEXT", "ATTEMPT"]
    due = [str(staged["pending"]), str(later)]
    assert listed(out) == due  # soonest first, and only deliveries with a next attempt
    assert first.endswith(" ago)") and re.search(r"Z \(in (1h59m|2h)\)$", second)
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--due", "--json")
    assert [edge["node"]["id"] for edge in json.loads(out)["edges"]] == due
    code, out, _ = run(capsys, database_url, "deliveries", "list")  # newest first
    assert listed(out)[:2] == [str(later), str(staged["done"])]


def test_deliveries_list_filters_by_event_type(capsys, database_url, staged):
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--event-type", "user.created")
    assert code == 0
    assert listed(out) == [str(staged["done"])]
    assert out.splitlines()[-1] == "1 shown of 1 matching"
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--event-type", "user.created",
                       "--event-type", "order.created", "--json")
    assert json.loads(out)["totalCount"] == 4
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--event-type", "no.such")
    assert code == 0 and out.splitlines()[-1] == "0 shown of 0 matching"


def test_deliveries_list_filters_by_created_before(capsys, database_url, staged, make):
    old, older = staged["failed"]
    make.set(old, created_at=datetime(2024, 5, 1, 12, tzinfo=UTC))
    make.set(older, created_at=datetime(2024, 4, 1, 12, tzinfo=UTC))
    code, out, _ = run(capsys, database_url, "deliveries", "list",
                       "--created-before", "2024-06-01T00:00:00Z")
    assert code == 0
    assert listed(out) == [str(old), str(older)]
    code, out, _ = run(capsys, database_url, "deliveries", "list",  # [after, before)
                       "--created-after", "2024-04-01T12:00:00Z",
                       "--created-before", "2024-05-01T12:00:00Z")
    assert listed(out) == [str(older)]
    code, _, err = run(capsys, database_url, "deliveries", "list", "--created-before", "May")
    assert code == 2 and "BAD_USER_INPUT" in err


def test_bulk_replay_draws_a_progress_bar_on_a_terminal(database_url, staged, make):
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "replay", "--since", "1h", "--status", "failed",
         "--database-url", database_url],
        stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL)
    os.close(terminal)
    out, _ = process.communicate(timeout=PATIENCE)  # its few lines fit the terminal's buffer
    os.set_blocking(controller, False)
    screen = b""
    with contextlib.suppress(OSError):  # all read (EAGAIN), or the terminal closed (EIO)
        while chunk := os.read(controller, 4096):
            screen += chunk
    os.close(controller)
    assert process.returncode == 0 and out == b"2 replayed, 0 expedited, 0 skipped\n"
    text = screen.decode()
    bar = "\r[" + "#" * 30 + "]  100% 2 replayed, 0 expedited, 0 skipped"
    assert bar in text, text
    assert "replay: done, 2 replayed, 0 expedited, 0 skipped" in text.split(bar, 1)[1]
    assert {make.row(i)["status"] for i in staged["failed"]} == {"pending"}


def test_deliveries_show_prints_one_delivery_and_fails_for_an_unknown_one(capsys, database_url,
                                                                          staged):
    code, out, _ = run(capsys, database_url, "deliveries", "show", str(staged["failed"][0]))
    assert code == 0
    assert out.startswith(f"delivery {staged['failed'][0]}  failed")
    assert "payload:" in out
    code, out, err = run(capsys, database_url, "deliveries", "show", "999999")
    assert (code, out) == (1, "")
    assert "not found (NOT_FOUND)" in err
    code, _, err = run(capsys, database_url, "deliveries", "show", "msg_nope")
    assert code == 1 and "no delivery has the webhook-id 'msg_nope' (NOT_FOUND)" in err


def test_deliveries_show_finds_a_delivery_by_webhook_id_with_its_hold_and_last_answer(
        capsys, database_url, staged, make):
    target = staged["pending"]
    with make.pool.transaction() as cursor:
        cursor.execute(
            "INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt_number,"
            " replay_generation,"
            " endpoint, outcome, status_code, duration_ms, response_excerpt, created_at)"
            " VALUES (1, %s, 1, 0, 'http://x', 'http_error', 503, 12,"
            " 'upstream overloaded, try later', '2026-12-04T03:00:07+00')", (target,))
    health.pause(make.pool, PLATFORM, staged["orders"].id, reason="receiver migrating")
    webhook_id = make.row(target)["webhook_id"]
    code, out, _ = run(capsys, database_url, "deliveries", "show", webhook_id)
    assert code == 0 and out.startswith(f"delivery {target}  pending")
    held = next(line for line in out.splitlines() if line.strip().startswith("held by"))
    assert re.search(r"held by\s+pause since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(.+ ago\): "
                     r"receiver migrating$", held), held
    assert "last answer (attempt 1, HTTP 503, 2026-12-04T03:00:07Z (" in out
    assert "  upstream overloaded, try later" in out
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--config", "orders",
                       "--status", "pending")
    assert out.splitlines()[1].split()[:3] == [str(target), "pending", "pause"]


def test_configs_history_shows_who_changed_what_and_why(capsys, database_url, staged):
    orders = staged["orders"].id
    run(capsys, database_url, "configs", "pause", "orders", "--reason", "on call")
    run(capsys, database_url, "configs", "resume", orders)
    code, out, _ = run(capsys, database_url, "configs", "history", "orders")
    assert code == 0
    rows = [line.split(None, 5) for line in out.splitlines()[1:-1]]
    assert [(row[3], row[4]) for row in rows] == [("resumed", "cli:" + getpass.getuser()),
                                                  ("paused", "cli:" + getpass.getuser())]
    assert out.splitlines()[-1] == "2 changes of orders"
    code, out, _ = run(capsys, database_url, "configs", "history", orders, "--json")
    assert [c["reason"] for c in json.loads(out)] == ["resumed by an operator", "on call"]


def test_replay_of_one_delivery_makes_a_new_generation(capsys, database_url, staged, make):
    target = staged["failed"][0]
    code, out, _ = run(capsys, database_url, "replay", str(target), "--json")
    assert code == 0
    assert json.loads(out)["action"] == "REPLAYED"
    assert make.row(target)["replay_generation"] == 1
    code, _, err = run(capsys, database_url, "replay", str(staged["done"]))
    assert code == 1 and "NOT_ELIGIBLE" in err


def test_bulk_replay_dry_run_changes_nothing_then_the_replay_does(capsys, database_url,
                                                                  staged, make):
    code, out, _ = run(capsys, database_url, "replay", "--since", "1h", "--config",
                       staged["orders"].id, "--dry-run")
    assert code == 0
    assert out.startswith("dry run: 3 deliveries would be replayed or expedited")
    assert {make.row(i)["status"] for i in staged["failed"]} == {"failed"}
    code, out, err = run(capsys, database_url, "replay", "--since", "1h", "--status", "failed",
                         "--json")
    assert code == 0
    assert json.loads(out) == {"replayed": 2, "expedited": 0, "skipped": 0}
    assert "replay: done, 2 replayed" in err
    assert {make.row(i)["status"] for i in staged["failed"]} == {"pending"}


def test_bulk_replay_without_a_window_is_bad_usage(capsys, database_url, staged):
    code, _, err = run(capsys, database_url, "replay", "--status", "failed")
    assert code == 2 and "createdAfter" in err
    code, _, err = run(capsys, database_url, "replay", "--since", "soon")
    assert code == 2 and "--since" in err


def test_stats_and_configs_list(capsys, database_url, staged, make):
    code, out, _ = run(capsys, database_url, "stats")
    assert code == 0
    assert out.splitlines()[0].split() == ["pending", "1"]
    assert "failed" in out and "queue depth" in out
    code, out, _ = run(capsys, database_url, "stats", "--json")
    assert json.loads(out)["stats"]["queueDepth"] == 1
    configs.deactivate(make.pool, PLATFORM, staged["users"].id)
    code, out, _ = run(capsys, database_url, "configs", "list", "--active", "no", "--json")
    assert code == 0
    assert [c["name"] for c in json.loads(out)] == ["users"]
    code, out, _ = run(capsys, database_url, "configs", "list")
    assert code == 0
    assert "orders" in out and "inactive" in out
    code, out, _ = run(capsys, database_url, "configs", "list", "--search", "ORD", "--json")
    assert code == 0
    assert [c["name"] for c in json.loads(out)] == ["orders"]
    assert json.loads(out)[0]["recentAttempts"] == {"attempts": 0, "successRate": None}


def test_configs_list_calls_a_failing_endpoint_failing_and_a_recovered_one_recovered(
        capsys, database_url, staged, make):
    flapping = make.config(name="flapping", event_types=["flap"])
    for config, in_a_row, minutes in ((staged["orders"], 4, 20), (staged["users"], 0, 20),
                                      (flapping, 0, 1)):
        with make.pool.transaction() as cursor:
            cursor.execute("UPDATE config_health SET consecutive_failures = %s, last_failure = "
                           "'HTTP 500', last_failure_at = now() - make_interval(mins => %s) "
                           "WHERE config_id = %s", (in_a_row, minutes, config.id))
    code, out, _ = run(capsys, database_url, "configs", "list")
    rows = {line.split()[1]: line for line in out.splitlines()[1:]}
    assert code == 0
    assert "failing (4 in a row)" in rows["orders"]
    assert re.search(r"\bhealthy\b.*recovered; before: 20m ago: HTTP 500", rows["users"]), out
    # its last attempt succeeded, but it failed a minute ago: not called recovered yet
    assert "recovered" not in rows["flapping"] and "HTTP 500" in rows["flapping"]


def test_an_unreachable_database_exits_3(capsys):
    code = main(["stats", "--database-url", "postgresql://nobody@127.0.0.1:1/none"])
    assert code == 3


def test_configs_pause_and_resume_change_the_health(capsys, database_url, staged):
    orders = staged["orders"].id
    code, out, _ = run(capsys, database_url, "configs", "pause", orders, "--reason", "on call")
    assert code == 0 and out.strip()
    code, out, _ = run(capsys, database_url, "configs", "list", "--health", "paused", "--json")
    assert [c["id"] for c in json.loads(out)] == [orders]
    assert json.loads(out)[0]["health"]["reason"] == "on call"
    code, out, _ = run(capsys, database_url, "configs", "list")
    assert "paused" in out
    code, out, _ = run(capsys, database_url, "configs", "resume", orders, "--json")
    assert code == 0 and json.loads(out)["config"]["health"]["state"] == "HEALTHY"
    code, _, err = run(capsys, database_url, "configs", "pause", "no-such-config")
    assert code == 1 and "NOT_FOUND" in err


def test_configs_update_orders_a_config_per_key_by_its_name(capsys, database_url, staged):
    code, out, _ = run(capsys, database_url, "configs", "update", "orders", "--ordering",
                       "per-key", "--block-on-failure", "no")
    assert code == 0
    assert out == (f"config orders ({staged['orders'].id}): ordering per-key, "
                   f"block on failure no\n")
    code, out, _ = run(capsys, database_url, "configs", "update", "orders",
                       "--block-on-failure", "yes", "--json")
    assert code == 0 and json.loads(out) == {"id": staged["orders"].id, "name": "orders",
                                             "ordering": "PER_KEY", "blockOnFailure": True}
    code, out, err = run(capsys, database_url, "configs", "update", "orders")
    assert code == 2 and out == "" and "give --ordering or --block-on-failure" in err
    code, _, err = run(capsys, database_url, "configs", "update", "no-such", "--ordering",
                       "unordered")
    assert code == 1 and "NOT_FOUND" in err
    with pytest.raises(SystemExit) as refused:
        main(["configs", "update", "orders", "--ordering", "sorted"])
    assert refused.value.code == 2 and "invalid choice: 'sorted'" in capsys.readouterr().err


def audit_lines(text: str) -> list[dict]:
    return [line for line in map(json.loads, (t for t in text.splitlines() if t.startswith("{")))
            if line.get("logger") == "webhooks.audit"]


def test_changes_made_on_call_leave_an_audit_line_naming_the_operator(capsys, database_url,
                                                                       staged, tmp_path):
    trail = tmp_path / "trail" / "audit.log"
    orders = staged["orders"].id

    def audited(*argv):
        before = trail.read_text() if trail.exists() else ""
        _, out, err = run(capsys, database_url, *argv, "--audit-log", str(trail))
        assert audit_lines(out + err) == []  # the person running it reads no JSON
        return audit_lines(trail.read_text()[len(before):] if trail.exists() else "")

    (line,) = audited("configs", "pause", orders)
    assert (line["audit"], line["role"], line["ids"]["config_id"], line["result"]) == (
        "pauseConfig", "operator", orders, "ok")
    assert line["actor"].startswith("cli:")
    assert [(line["audit"], line["result"]) for line in audited(
        "replay", str(staged["failed"][0]))] == [("replayDelivery", "ok")]
    assert [line["result"] for line in audited("configs", "resume", "no-such-config")] == [
        "NOT_FOUND"]
    assert audited("deliveries", "list") == []  # reading changes nothing and leaves no line


def test_the_audit_trail_goes_to_the_users_state_directory_or_where_it_is_told(
        capsys, database_url, staged, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run(capsys, database_url, "configs", "pause", "orders")
    (line,) = audit_lines((tmp_path / "state" / "webhooks" / "audit.log").read_text())
    assert line["audit"] == "pauseConfig"
    _, _, err = run(capsys, database_url, "configs", "resume", "orders", "--audit-log", "-")
    assert [line["audit"] for line in audit_lines(err)] == ["resumeConfig"]
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the log's directory would be
    _, _, err = run(capsys, database_url, "configs", "pause", "orders", "--audit-log",
                    str(blocked / "audit.log"))
    assert f"cannot write the audit log {blocked / 'audit.log'}" in err
    assert [line["audit"] for line in audit_lines(err)] == ["pauseConfig"]  # never unaudited


def test_a_config_is_named_by_its_id_or_its_name_and_an_unknown_one_is_an_error(
        capsys, database_url, staged, make):
    by_name = run(capsys, database_url, "replay", "--config", "orders", "--since", "1h",
                  "--dry-run", "--json")
    by_id = run(capsys, database_url, "replay", "--config", staged["orders"].id, "--since",
                "1h", "--dry-run", "--json")
    assert by_name[0] == by_id[0] == 0
    assert json.loads(by_name[1])["wouldReplay"] == json.loads(by_id[1])["wouldReplay"] == 3
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--config", "users", "--json")
    assert code == 0 and [e["node"]["id"] for e in json.loads(out)["edges"]] == [
        str(staged["done"])]
    code, out, err = run(capsys, database_url, "replay", "--config", "crm-sync", "--since",
                         "1h", "--dry-run")
    assert code == 1 and out == ""
    assert "no config has the id or the name 'crm-sync' (NOT_FOUND)" in err
    make.config(name="orders")  # two configs of one name: an id is needed
    code, _, err = run(capsys, database_url, "configs", "pause", "orders")
    assert code == 2 and "2 configs are named 'orders'" in err
    code, out, _ = run(capsys, database_url, "configs", "pause", "users")
    assert code == 0 and "paused" in out


@pytest.mark.slow  # a long proof (20-45 s): run by CI after the default tier
def test_a_listing_whose_reader_goes_away_ends_quietly(database_url, make):
    """`webhooks configs list | head -c 1` with more output than a pipe holds: no
    BrokenPipeError traceback, the exit status of a program that SIGPIPE ended."""
    with make.pool.transaction() as cursor:
        cursor.execute("INSERT INTO configs (tenant_id, id, name, endpoint, secret, event_types) "
                       "SELECT 1, 'many-' || g, repeat('n', 60) || g, 'https://example.com/' "
                       "|| repeat('p', 60), 'whsec_x', ARRAY['t'] FROM generate_series(1, 1000) g")
    shell = (f"{sys.executable} -m service configs list --database-url '{database_url}' "
             "| head -c 1; exit ${PIPESTATUS[0]}")
    for _ in range(3):  # the reader may go before or after the first write: either way
        result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                                timeout=120)
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr
        assert result.returncode == 141, result.stderr


CREATE = """mutation ($input: CreateConfigInput!) {
  createConfig(input: $input) { config { endpoint } }
}"""


@pytest.mark.parametrize("allowed", [False, True])
def test_the_command_lines_api_refuses_private_endpoints_as_the_web_does(settings, pool,
                                                                         allowed):
    """The command line runs the API in its own process, with the context the web builds:
    the same settings decide whether an endpoint on a private address is refused."""
    settings = dataclasses.replace(settings, allow_private_endpoints=allowed)
    api = LocalApi(settings, pool)
    new = {"input": {"endpoint": "http://127.0.0.1:9/hook", "eventTypes": ["x"]}}
    if allowed:
        assert api.run(CREATE, new)["createConfig"]["config"]["endpoint"] == \
            "http://127.0.0.1:9/hook"
    else:
        with pytest.raises(ApiFailure) as refused:
            api.run(CREATE, new)
        assert refused.value.code == BAD_USER_INPUT and "private" in str(refused.value)


@pytest.fixture
def acme(make, staged):
    """Beside the default tenant's `staged` configs, the tenant cus_acme ("Acme") with its
    config `acme-hooks`, a failed delivery and a pending one."""
    tenant = tenants.create(make.pool, uid="cus_acme", name="Acme")
    config = make.config(name="acme-hooks", event_types=["acme.event"], tenant_id=tenant.id)
    failed = make.delivery(config, status="failed", next_attempt_at=None, last_status_code=500)
    return {"config": config, "failed": failed, "pending": make.delivery(config)}


def test_the_on_call_commands_act_as_one_tenant_with_tenant(capsys, database_url, staged,
                                                              acme, make, tmp_path):
    mine = {str(acme["failed"]), str(acme["pending"])}
    code, out, _ = run(capsys, database_url, "configs", "list", "--tenant", "cus_acme")
    assert code == 0 and "TENANT" not in out.splitlines()[0]
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["acme-hooks"]
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--tenant", "cus_acme")
    assert code == 0 and "TENANT" not in out.splitlines()[0]
    assert set(listed(out)) == mine
    code, out, _ = run(capsys, database_url, "deliveries", "show", str(acme["failed"]),
                       "--tenant", "cus_acme")
    assert code == 0 and "tenant" not in out.split("attempts (oldest first)")[0]

    # Another tenant's objects are not found, by name or by id, and stay as they were.
    for argv in (["deliveries", "show", str(staged["failed"][0])],
                 ["replay", str(staged["failed"][0])],
                 ["configs", "pause", "orders"],
                 ["configs", "pause", staged["orders"].id],
                 ["deliveries", "list", "--config", "orders"]):
        code, out, err = run(capsys, database_url, *argv, "--tenant", "cus_acme")
        assert (code, out) == (1, "") and "NOT_FOUND" in err, argv
    assert make.row(staged["failed"][0])["status"] == "failed"
    assert health.of_configs(make.pool, PLATFORM, [staged["orders"].id])[
        staged["orders"].id].state == "healthy"

    code, out, _ = run(capsys, database_url, "replay", "--since", "1h", "--dry-run",
                       "--tenant", "cus_acme", "--json")
    assert code == 0 and {d["id"] for d in json.loads(out)["sample"]} == mine
    trail = tmp_path / "audit.log"
    code, out, _ = run(capsys, database_url, "configs", "pause", "acme-hooks", "--tenant",
                       "cus_acme", "--audit-log", str(trail))
    assert code == 0
    (line,) = audit_lines(trail.read_text())
    assert (line["audit"], line["tenant"], line["result"]) == ("pauseConfig", "cus_acme", "ok")
    code, out, _ = run(capsys, database_url, "stats", "--tenant", "cus_acme")
    assert code == 0 and out.splitlines()[0].startswith("tenant cus_acme (Acme)")
    counts = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:6]}
    assert counts == {"pending": "1", "delivering": "0", "succeeded": "0", "failed": "1",
                      "cancelled": "0"}
    assert "rejected" not in out
    code, out, _ = run(capsys, database_url, "stats", "--tenant", "cus_acme", "--json")
    assert json.loads(out)["tenant"]["stats"]["queueDepth"] == 1


def test_the_platform_wide_listings_name_each_rows_tenant(capsys, database_url, staged, acme):
    code, out, _ = run(capsys, database_url, "configs", "list")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["ID", "NAME", "TENANT"]
    tenant_of = {line.split()[1]: line.split()[2] for line in out.splitlines()[1:]}
    assert tenant_of == {"acme-hooks": "cus_acme", "orders": "default", "users": "default"}
    code, out, _ = run(capsys, database_url, "deliveries", "list", "--status", "failed")
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    assert " cus_acme " in rows[str(acme["failed"])]
    assert " default " in rows[str(staged["failed"][0])]
    code, out, _ = run(capsys, database_url, "deliveries", "show", str(acme["failed"]))
    assert re.search(r"^  tenant\s+Acme \(cus_acme\)$", out, re.MULTILINE), out
    code, out, _ = run(capsys, database_url, "replay", "--since", "1h", "--dry-run")
    assert out.splitlines()[1].split()[:4] == ["ID", "STATUS", "EVENT", "TYPE"]
    assert "TENANT" in out.splitlines()[1] and " cus_acme " in out


@pytest.mark.parametrize("argv", [["configs", "list"], ["configs", "pause", "acme-hooks"],
                                  ["deliveries", "list"], ["deliveries", "show", "1"],
                                  ["replay", "1"], ["replay", "--since", "1h", "--dry-run"],
                                  ["stats"]])
def test_an_unknown_or_deleted_tenant_is_not_found(capsys, database_url, acme, make, argv):
    code, out, err = run(capsys, database_url, *argv, "--tenant", "cus_nobody")
    assert (code, out) == (1, "")
    assert err.endswith("tenant 'cus_nobody' not found (NOT_FOUND)\n"), err
    tenants.delete(make.pool, "cus_acme")
    code, out, err = run(capsys, database_url, *argv, "--tenant", "cus_acme")
    assert (code, out) == (1, "") and "tenant 'cus_acme' not found (NOT_FOUND)" in err
