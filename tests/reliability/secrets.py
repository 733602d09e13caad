"""The secrets scenario: after creation, no secret or token shows in logs, errors or API output.

Configs are created and their secrets rotated through a real `webhooks web` process
(gunicorn) with operator and viewer tokens; half the secrets are given, half minted, and some
mutations are refused for a malformed secret or token. Real `webhooks worker` processes
deliver to an endpoint that echoes the request's headers (its signatures) back in its
answer, and to hostile ones. Then every secret and token is looked for in everything that
was shown after creation: the API's answers to both tokens, its errors, and the debug logs
of every process. `leaked()` is the search tests/api/test_secrets.py uses too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import requests
from gevent.server import StreamServer

from db import tokens
from db.configs import mint_secret
from db.pool import ConnectionPool
from service.local.ports import reserve_port
from service.local.processes import ROOT
from tests.catalogues.hostile_endpoints import KINDS, HostileEndpoints, head, read_request
from tests.reliability.attacks import NO_CRASH_SETTINGS, judge_workers, run_workers
from tests.reliability.check import Findings, Verdict
from tests.reliability.fleet import READY_TIMEOUT, STOP_TIMEOUT, Workers
from tests.reliability.run import Options

EVENT_TYPE = "secrets.probe"
EVENTS = 3  # events published; each goes to every config
HOSTILE = ("invalid_http", "tls_untrusted", "redirect_internal")  # endpoints that fail oddly
CONFIG_FIELDS = "id name endpoint eventTypes active createdAt updatedAt previousSecretsExpireAt"
DELIVERY_FIELDS = ("id eventId status attemptCount lastStatusCode lastError payload "
                   "attempts { endpoint outcome statusCode error responseExcerpt }")
PREFIXES = ("whsec_", "whk_")
Say = Callable[[str], None]


def leaked(text: str, secrets: Iterable[str]) -> list[str]:
    """Return the secrets and tokens of `secrets` whose key part occurs in `text`."""
    return [secret for secret in secrets if _key(secret) in text]


def _key(secret: str) -> str:
    for prefix in PREFIXES:
        secret = secret.removeprefix(prefix)
    return secret


def secrets(dsn: str, workdir: Path, options: Options, say: Say = print) -> Verdict:
    """Create and rotate `options.secret_configs` configs' secrets; look for them everywhere."""
    with contextlib.closing(ConnectionPool(dsn, size=1)) as pool:
        operator = tokens.create(pool, name="chaos-operator", tenant_id=None, role="operator")[1]
        viewer = tokens.create(pool, name="chaos-viewer", tenant_id=None, role="viewer")[1]
    hostile = HostileEndpoints(workdir)
    hostile.start()
    settings = options.worker_settings(WEBHOOKS_MAX_ATTEMPTS="2", WEBHOOKS_LOG_LEVEL="debug",
                                       **NO_CRASH_SETTINGS)
    try:
        with _echo() as echo, _web(dsn, workdir) as url:
            api = _Api(url)
            endpoints = [f"{echo}/ok", f"{echo}/fail",
                         *(hostile.url(kind) for kind in KINDS if kind.name in HOSTILE)]
            looked_for, config_ids = _create_and_rotate(api, operator, endpoints,
                                                        options.secret_configs)
            looked_for += _refused(api, operator, viewer, config_ids[0])
            for n in range(EVENTS):
                api.data(operator, "mutation ($p: JSON!) { publishEvent(input: {type: "
                         f'"{EVENT_TYPE}", payload: $p}}) {{ deliveryIds }} }}', {"p": {"n": n}})
            facts = run_workers(Workers(dsn, workdir, settings, options.workers), options, say)
            shown = _everything_shown(api, operator, viewer, config_ids)
    finally:
        hostile.stop()
    logs = [path.read_text(errors="replace") for path in sorted(workdir.glob("*.log"))]
    return judge_secrets(looked_for, [operator, viewer], shown, logs, facts, options)


def judge_secrets(secrets: list[str], api_tokens: list[str], shown: list[str],
                  logs: list[str], facts: dict[str, Any], options: Options) -> Verdict:
    """Require no secret or token in anything shown or logged, and that echoes were seen."""
    found = Findings()
    for where, texts in (("API output", shown), ("log", logs)):
        for secret in leaked("\n".join(texts), secrets + api_tokens):
            found.add(f"secret or token in the {where}", secret[:10] + "…")
    echoed = sum(text.count("v1,") for text in shown)
    found.require(echoed > 0, "no signature echo in the API output",
                  "the endpoint's answers did not reach what was searched")
    judge_workers(facts, found)
    counts = {**facts, "secrets_checked": len(secrets), "tokens_checked": len(api_tokens),
              "secret_configs": options.secret_configs, "api_responses": len(shown),
              "api_bytes": sum(map(len, shown)), "log_lines": sum(t.count("\n") for t in logs),
              "log_files": len(logs), "echoed_signatures": echoed,
              "leaks": sum(found.counts.values()), "workers": options.workers,
              "concurrency": options.concurrency}
    return found.verdict(counts)


class _Api:
    """POST GraphQL to the web process with a bearer token."""

    def __init__(self, url: str) -> None:
        self.url = f"{url}/graphql"
        self.session = requests.Session()

    def post(self, token: str | None, query: str, variables: dict | None = None) -> str:
        """Return the text of the answer, which must not be a server error."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = self.session.post(self.url, json={"query": query, "variables": variables or {}},
                                   headers=headers, timeout=60)
        if answer.status_code >= 500:
            raise RuntimeError(f"the API answered {answer.status_code}: {answer.text[:500]}")
        return answer.text

    def data(self, token: str, query: str, variables: dict | None = None) -> dict:
        """Return the data of an operation that must succeed."""
        body = json.loads(self.post(token, query, variables))
        if body.get("errors"):
            raise RuntimeError(f"the API refused {query[:60]!r}: {body['errors']}")
        return body["data"]


def _create_and_rotate(api: _Api, operator: str, endpoints: list[str],
                       count: int) -> tuple[list[str], list[str]]:
    """Create `count` configs (secrets given or minted), rotate each; return secrets and ids."""
    secrets, ids = [], []
    for n in range(count):
        given = mint_secret() if n % 2 else None
        created = api.data(operator, "mutation ($e: String!, $s: String) { createConfig(input: "
                           f'{{endpoint: $e, eventTypes: ["{EVENT_TYPE}"], secret: $s}}) '
                           "{ config { id } secret } }",
                           {"e": endpoints[n % len(endpoints)], "s": given})["createConfig"]
        ids.append(created["config"]["id"])
        rotated = api.data(operator, "mutation ($id: ID!, $s: String) { rotateConfigSecret("
                           "id: $id, secret: $s) { secret } }",
                           {"id": ids[-1], "s": None if n % 2 else mint_secret()})
        secrets += [created["secret"], rotated["rotateConfigSecret"]["secret"]]
    return secrets, ids


def _refused(api: _Api, operator: str, viewer: str, config_id: str) -> list[str]:
    """Send secrets and tokens the API must refuse; return them (its errors must not echo them)."""
    short = "whsec_" + "QUJDREVGR0g="  # 8 bytes: too short
    unknown = mint_secret()
    wrong_token = "whk_" + "Tm90QVJlYWxUb2tlbkF0QWxsMTIzNDU2"
    create = ('mutation ($s: String) { createConfig(input: {endpoint: "http://127.0.0.1:9/x", '
              f'eventTypes: ["{EVENT_TYPE}"], secret: $s}}) {{ secret }} }}')
    api.post(operator, create, {"s": short})
    api.post(operator, create, {"s": unknown + "!"})
    api.post(viewer, create, {"s": unknown})  # a viewer may not create configs
    api.post(operator, "mutation ($s: String) { rotateConfigSecret(id: \"nope\", secret: $s) "
                       "{ secret } }", {"s": unknown})
    api.post(wrong_token, f'{{ config(id: "{config_id}") {{ id }} }}')
    return [short, unknown, wrong_token]


def _everything_shown(api: _Api, operator: str, viewer: str, config_ids: list[str]) -> list[str]:
    """Return the text of every answer the API gives about the configs and deliveries."""
    shown: list[str] = []
    delivery_ids: dict[str, None] = {}
    for token in (operator, viewer):
        shown.append(api.post(token, f"{{ configs(first: 1000) {{ edges {{ node {{ "
                                     f"{CONFIG_FIELDS} }} }} }} }}"))
        shown += [api.post(token, f'{{ config(id: "{id}") {{ {CONFIG_FIELDS} }} }}')
                  for id in config_ids]
        after = None
        while True:
            shown.append(api.post(token, "query ($after: String) { deliveries(first: 1000, "
                                         "after: $after) { edges { node { id lastError } } "
                                         "pageInfo { hasNextPage endCursor } } }",
                                  {"after": after}))
            page = json.loads(shown[-1])["data"]["deliveries"]
            delivery_ids.update(dict.fromkeys(edge["node"]["id"] for edge in page["edges"]))
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
    shown += [api.post(viewer, f'{{ delivery(id: "{id}") {{ {DELIVERY_FIELDS} }} }}')
              for id in delivery_ids]
    shown.append(api.post(viewer, "{ rejectedEvents { edges { node { id reason } } } }"))
    return shown


@contextlib.contextmanager
def _echo() -> Iterator[str]:
    """An endpoint that answers with the request's head (its signatures): 200 on /ok, else 500."""

    def handle(sock: socket.socket, address) -> None:
        with contextlib.suppress(OSError):
            request, _ = read_request(sock, b"")
            if request is not None:
                status = 200 if request.split(b" ")[1].endswith(b"/ok") else 500
                sock.sendall(head(status, {"Content-Length": str(len(request)),
                                           "Connection": "close"}) + request)
        sock.close()

    server = StreamServer(("127.0.0.1", 0), handle)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/echo"
    finally:
        server.stop(timeout=0)


@contextlib.contextmanager
def _web(dsn: str, workdir: Path) -> Iterator[str]:
    """Run `webhooks web` (one gevent worker, debug logs to web.log); yield its base URL."""
    port = reserve_port()
    environment = {**os.environ, "DATABASE_URL": dsn, "WEB_CONCURRENCY": "1",
                   "WEBHOOKS_METRICS_PORT": "0", "WEBHOOKS_LOG_LEVEL": "debug",
                   "WEBHOOKS_ALLOW_PRIVATE_ENDPOINTS": "true"}  # the echo endpoint is local
    with (workdir / "web.log").open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "service", "web", "--port", str(port)],
                                   cwd=ROOT, env=environment, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"webhooks web did not start; see {workdir / 'web.log'}")
            time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown: the run is over
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()


def _healthy(url: str) -> bool:
    try:
        return requests.get(f"{url}/healthz", timeout=1).status_code == 200
    except requests.RequestException:
        return False
