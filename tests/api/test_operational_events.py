"""Operational events, each made by its real cause (a 410, an operator's deactivateConfig, a
circuit that opens and recovers, a delivery out of attempts, a failure that holds its ordering
key) and heard, signed and matching its catalog schema, by the platform's own endpoint: a
config of the tenant WEBHOOKS_OPERATIONAL_TENANT names, served by a real worker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from db import catalog, configs, events, operational, tenants
from db.configs import Config
from db.operational_types import GROUP, TYPES
from db.scope import PLATFORM
from db.vocabulary import OperationalEvent, Ordering
from service.ingest.operational_relay import OperationalRelay
from service.local.processes import worker_environment
from service.runtime.settings import SettingsError
from tests.endpoint_health import events_for, open_circuit
from tests.helpers import PATIENCE, ROOT, wait_until
from tests.receivers import Receiver, Reply
from tests.signatures import verify

PUBLIC_URL = "https://hooks.example.com"
SUBSCRIBED = ["endpoint.*", "delivery.*", "ordering.*"]  # everything the platform hears
QUICK_RETRIES = {"min_backoff": 0.05, "max_backoff": 0.1}


@dataclass
class Platform:
    """The platform's own endpoint: a config of the operational tenant, and its receiver."""

    tenant_id: int
    config: Config
    secret: str
    receiver: Receiver


@pytest.fixture
def platform(make, receiver_factory) -> Platform:
    tenant = tenants.create(make.pool, uid="platform", name="The platform")
    receiver = receiver_factory()
    config = make.config(receiver.url, event_types=SUBSCRIBED, tenant_id=tenant.id,
                         name="platform alerts")
    return Platform(tenant.id, config, make.secrets[config.id], receiver)


@pytest.fixture
def acme(make) -> int:
    """A customer of the platform; its id."""
    return tenants.create(make.pool, uid="acme", name="Acme").id


def heard(make, platform: Platform, kind: OperationalEvent) -> dict[str, Any]:
    """Wait for the one event `kind` at the platform's endpoint; check that it is signed with
    the platform config's secret and that its payload satisfies its type's schema in the
    catalog; return the request's body."""
    def arrived():
        return [r for r in platform.receiver.requests if json.loads(r.body)["type"] == kind]

    (request,) = wait_until(arrived)
    verify(platform.secret, request.headers, request.body)
    body = json.loads(request.body)
    Draft202012Validator(catalog.get(make.pool, kind).schema).validate(body["data"])
    return body


def published(make, platform: Platform) -> list[str]:
    """Return the types of the operational tenant's events, in the order they were stored."""
    return make.column("SELECT type FROM events WHERE tenant_id = %s ORDER BY created_at, id",
                       (platform.tenant_id,))


def test_an_endpoint_answering_410_is_disabled_and_the_platform_hears_it(
        make, platform, acme, receiver_factory, start_worker):
    gone = receiver_factory(lambda request: Reply(status=410))
    config = make.config(gone.url, tenant_id=acme, name="Orders")
    start_worker(operational_tenant="platform", public_url=PUBLIC_URL)
    make.event(tenant_id=acme)
    body = heard(make, platform, OperationalEvent.ENDPOINT_DISABLED)
    assert body["id"].startswith(f"endpoint.disabled:{config.id}:")
    data = body["data"]
    assert data.pop("occurredAt")
    assert data == {"tenant": {"uid": "acme"}, "config": {"id": config.id, "name": "Orders"},
                    "reason": "endpoint answered 410 Gone", "actor": None,
                    "link": f"{PUBLIC_URL}/#/configs/{config.id}"}
    assert not configs.get(make.pool, PLATFORM, config.id).active


def test_an_operators_deactivation_is_heard_with_who_made_it(
        api, make, platform, acme, start_worker):
    config = make.config(tenant_id=acme, name="Invoices")
    start_worker(operational_tenant="platform")
    api.data("mutation ($id: ID!) { deactivateConfig(id: $id) { cancelledDeliveries } }",
             {"id": config.id})
    data = heard(make, platform, OperationalEvent.ENDPOINT_DISABLED)["data"]
    assert (data["actor"], data["reason"]) == ("ops", "deactivated by an operator")
    assert data["link"] == f"/#/configs/{config.id}"  # no public URL: a path on the web process
    api.data("mutation ($id: ID!) { activateConfig(id: $id) { id } }", {"id": config.id})
    api.data("mutation ($id: ID!) { deactivateConfig(id: $id) { cancelledDeliveries } }",
             {"id": config.id})  # a second deactivation is a second change, heard again
    wait_until(lambda: published(make, platform) == ["endpoint.disabled"] * 2)


def test_a_circuit_that_opens_and_recovers_is_heard_once_each_way(
        make, platform, acme, receiver_factory, start_worker):
    answers = {"status": 503}
    failing = receiver_factory(lambda request: Reply(status=answers["status"]))
    config = make.config(failing.url, tenant_id=acme)
    start_worker(operational_tenant="platform", circuit_failures=3, max_attempts=1000,
                 circuit_probe_interval=0.2, circuit_max_probe_interval=0.2,
                 endpoint_ramp=0.5, **QUICK_RETRIES)
    ids = [make.event(tenant_id=acme)[1][0] for _ in range(3)]
    opened = heard(make, platform, OperationalEvent.ENDPOINT_CIRCUIT_OPENED)["data"]
    assert opened["config"]["id"] == config.id
    # (3 or more: the attempts in flight when the third failed may be recorded with it)
    assert re.fullmatch(r"[3-9] consecutive failures", opened["reason"])
    # Failed probes re-open the circuit: it was open already, nothing more is announced.
    wait_until(lambda: make.count("SELECT count(*) FROM config_health_changes "
                                  "WHERE config_id = %s AND change = 'opened'",
                                  (config.id,)) >= 3)
    answers["status"] = 200
    recovered = heard(make, platform, OperationalEvent.ENDPOINT_RECOVERED)["data"]
    assert (recovered["reason"], recovered["actor"]) == ("the probe succeeded", None)
    wait_until(lambda: all(make.row(id)["status"] == "succeeded" for id in ids))
    assert published(make, platform) == ["endpoint.circuit_opened", "endpoint.recovered"]


def test_a_delivery_out_of_attempts_is_heard_as_exhausted(
        make, platform, acme, receiver_factory, start_worker):
    failing = receiver_factory(lambda request: Reply(status=500))
    config = make.config(failing.url, tenant_id=acme, name="Orders")
    start_worker(operational_tenant="platform", public_url=PUBLIC_URL, max_attempts=2,
                 **QUICK_RETRIES)
    event_id, (delivery_id,) = make.event(tenant_id=acme)
    body = heard(make, platform, OperationalEvent.DELIVERY_EXHAUSTED)
    assert body["id"] == f"delivery.exhausted:{delivery_id}:0"
    data = body["data"]
    assert data["delivery"] == {"id": str(delivery_id), "eventId": event_id,
                                "eventType": "order.created", "attempts": 2,
                                "replayGeneration": 0, "lastStatusCode": 500,
                                "orderingKey": None, "sequence": None}
    assert data["reason"] == ("HTTP 500; retry budget exhausted: 2 attempts "
                              "(WEBHOOKS_MAX_ATTEMPTS)")
    assert data["link"] == f"{PUBLIC_URL}/#/deliveries/{delivery_id}"
    assert (data["tenant"], data["config"]) == ({"uid": "acme"},
                                                {"id": config.id, "name": "Orders"})


def test_a_failure_that_holds_its_ordering_key_is_heard_and_is_not_exhausted(
        make, platform, acme, receiver_factory, start_worker):
    refusing = receiver_factory(lambda request: Reply(status=422))
    config = make.config(refusing.url, tenant_id=acme, ordering=Ordering.PER_KEY)
    start_worker(operational_tenant="platform")
    held, waiting = (events.new_event(f"ord-{n}", "order.created", {"n": n}, tenant_id=acme,
                                      max_payload=1 << 20, ordering_key="customer-42")
                     for n in (1, 2))
    (held_id,) = events.publish(make.pool, held).delivery_ids
    events.publish(make.pool, waiting)
    body = heard(make, platform, OperationalEvent.ORDERING_KEY_BLOCKED)
    assert body["id"] == f"ordering.key_blocked:{held_id}:0"
    data = body["data"]
    assert data["orderingKey"] == "customer-42"
    assert data["delivery"] == {"id": str(held_id), "eventId": "ord-1",
                                "eventType": "order.created", "attempts": 1,
                                "replayGeneration": 0, "lastStatusCode": 422,
                                "orderingKey": "customer-42", "sequence": 1}
    assert data["reason"].startswith("HTTP 422: not retried")
    assert data["link"] == f"/#/configs/{config.id}"  # its page lists the keys held
    # Refused for good at once, not out of budget: no delivery.exhausted.
    assert published(make, platform) == ["ordering.key_blocked"]
    assert len(refusing.requests) == 1  # the later delivery of the key waits


def test_nothing_is_announced_while_the_setting_is_unset(
        make, platform, acme, receiver_factory, start_worker):
    gone = receiver_factory(lambda request: Reply(status=410))
    failing = receiver_factory(lambda request: Reply(status=500))
    off = make.config(gone.url, event_types=["gone"], tenant_id=acme)
    make.config(failing.url, event_types=["failing"], tenant_id=acme)
    start_worker(max_attempts=1)
    make.event(type="gone", tenant_id=acme)
    _, (failed,) = make.event(type="failing", tenant_id=acme)
    wait_until(lambda: not configs.get(make.pool, PLATFORM, off.id).active
               and make.row(failed)["status"] == "failed")
    assert make.count("SELECT count(*) FROM operational_events") == 0
    assert published(make, platform) == []
    assert platform.receiver.requests == []


def test_the_operational_tenants_own_failing_endpoints_announce_nothing(
        make, platform, acme, start_worker):
    """The platform's endpoint fails the first announcement until its budget is spent, then
    answers the second with 410: were its own changes announced, each would make another
    delivery to it, and so on."""
    answers = [500, 500, 410]
    platform.receiver.respond = lambda request: Reply(
        status=answers[min(len(platform.receiver.requests), len(answers)) - 1])
    first, second = make.config(tenant_id=acme), make.config(tenant_id=acme)
    start_worker(operational_tenant="platform", max_attempts=2, **QUICK_RETRIES)

    def announcements(status):
        found = make.column("SELECT status FROM deliveries WHERE tenant_id = %s ORDER BY id",
                            (platform.tenant_id,))
        return found if found == status else None

    configs.deactivate(make.pool, PLATFORM, first.id)
    wait_until(lambda: announcements(["failed"]))  # exhausted: the platform's own
    configs.deactivate(make.pool, PLATFORM, second.id)
    wait_until(lambda: announcements(["failed", "failed"]))  # 410: the platform's own
    assert not configs.get(make.pool, PLATFORM, platform.config.id).active
    assert published(make, platform) == ["endpoint.disabled"] * 2
    assert make.count("SELECT count(*) FROM operational_events") == 0


def test_a_deleted_tenants_stopped_configs_are_not_announced(api, make, platform, acme):
    operational.point_at(make.pool, "platform")
    make.config(tenant_id=acme)
    api.data('mutation { deleteTenant(uid: "acme") { configsStopped } }')
    assert make.count("SELECT count(*) FROM operational_events") == 0


def test_a_worker_refuses_to_start_for_a_tenant_nobody_has(make, start_worker):
    with pytest.raises(SettingsError, match="no tenant has the uid 'nobody'"):
        start_worker(operational_tenant="nobody")


@pytest.mark.slow
def test_the_worker_command_exits_saying_which_tenant_nobody_has(database_url):
    ended = subprocess.run([sys.executable, "-m", "service", "worker"], cwd=ROOT,
                           env=worker_environment(database_url,
                                                  WEBHOOKS_OPERATIONAL_TENANT="nobody"),
                           capture_output=True, text=True, timeout=PATIENCE)
    assert ended.returncode == 2
    assert ("webhooks worker: WEBHOOKS_OPERATIONAL_TENANT: no tenant has the uid 'nobody' "
            "(create it first, or unset the setting)") in ended.stderr


def test_the_types_are_registered_once_with_their_schemas(make, platform, settings):
    for _ in range(2):  # as two workers starting one after the other
        assert OperationalRelay(make.pool, settings.replace(operational_tenant="platform")
                                ).prepare()
    for kind, entry in TYPES.items():
        registered = catalog.get(make.pool, kind)
        assert (registered.group_name, registered.schema_version) == (GROUP, 1)
        assert (registered.schema, registered.examples) == (entry.schema, [entry.example])


def test_a_platform_type_of_the_same_name_stops_the_worker(make, platform, start_worker):
    catalog.create(make.pool, name="endpoint.recovered", group_name="monitoring")
    with pytest.raises(SettingsError, match=r"'endpoint\.recovered' of group 'monitoring'"):
        start_worker(operational_tenant="platform")


def test_an_announcement_published_again_is_one_event(make, platform, acme):
    tenant_id = operational.point_at(make.pool, "platform")
    operational.register_types(make.pool)
    config = make.config(tenant_id=acme)
    configs.deactivate(make.pool, PLATFORM, config.id)
    (row,) = make.rows("SELECT event_id, type, tenant_id, config_id, reason, occurred_at "
                       "FROM operational_events")
    relay = {"tenant_id": tenant_id, "public_url": None, "max_payload": 1 << 20,
             "strict": False, "limit": 10}
    assert operational.relay(make.pool, **relay) == 1
    with make.pool.transaction() as cursor:  # as if the change's transaction ran twice
        cursor.execute("INSERT INTO operational_events (event_id, type, tenant_id, config_id, "
                       "reason, occurred_at) VALUES (%s, %s, %s, %s, %s, %s)", row)
    assert operational.relay(make.pool, **relay) == 1
    assert published(make, platform) == ["endpoint.disabled"]
    assert make.count("SELECT count(*) FROM deliveries WHERE tenant_id = %s",
                      (tenant_id,)) == 1


def test_an_operators_circuit_reset_is_a_recovery_and_a_pause_is_no_news(api, make, platform):
    operational.point_at(make.pool, "platform")
    config = make.config()  # of the tenant `default`
    events_for(make, config, 3)
    open_circuit(make, config)
    for mutation in ("pauseConfig", "resumeConfig", "resetCircuit"):
        api.data(f"mutation ($id: ID!) {{ {mutation}(id: $id) {{ changed }} }}", {"id": config.id})
    assert make.rows("SELECT type, reason, actor FROM operational_events ORDER BY position") == [
        ("endpoint.circuit_opened", "3 consecutive failures", None),
        ("endpoint.recovered", "circuit reset by an operator", "ops")]


def test_the_outbox_holds_exactly_the_operational_types(make):
    (definition,) = make.column(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = 'operational_events'::regclass AND contype = 'c'")
    assert sorted(re.findall(r"'([a-z_.]+)'::text", definition)) == sorted(OperationalEvent)


def test_once_the_operational_tenant_is_deleted_nothing_is_announced(api, make, platform, acme):
    operational.point_at(make.pool, "platform")
    config = make.config(tenant_id=acme)
    api.data('mutation { deleteTenant(uid: "platform") { configsStopped } }')
    configs.deactivate(make.pool, PLATFORM, config.id)
    assert make.count("SELECT count(*) FROM operational_events") == 0


def test_the_docs_set_it_up_as_they_say(api, make, settings):
    docs = (ROOT / "docs" / "operational-events.md").read_text()
    setup = docs.split("## Setting it up", 1)[1].split("##", 1)[0]
    create_tenant, subscribe = re.findall(r"```graphql\n(.*?)```", setup, re.DOTALL)
    api.data(create_tenant)
    # What a worker started with the setting does first (the types it registers).
    OperationalRelay(make.pool, settings.replace(operational_tenant="platform")).prepare()
    config = api.data(subscribe)["createConfig"]["config"]
    assert configs.get(make.pool, PLATFORM, config["id"]).ordering == Ordering.PER_KEY
