"""The web process's /metrics: requests by operation and outcome, their duration, events."""

from tests.integration.test_telemetry import samples

PUBLISH = ('mutation ($id: String) { publishEvent(input: {type: "a", payload: {}, id: $id}) '
           '{ eventId } }')


def _metrics(client) -> dict:
    response = client.get("/metrics")
    assert response.status_code == 200
    return samples(response.get_data(as_text=True))


def _value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def test_every_operation_is_exported_at_zero_before_any_request(client):
    found = _metrics(client)
    for operation in ("deliveries", "delivery", "stats", "createConfig", "publishEvent",
                      "replayDelivery", "none"):
        for outcome in ("ok", "client_error", "server_error"):
            assert _value(found, "webhooks_api_requests_total", operation=operation,
                          outcome=outcome) == 0, (operation, outcome)
        assert _value(found, "webhooks_api_request_duration_seconds_count",
                      operation=operation) == 0
    assert _value(found, "webhooks_ingested_events_total", source="api") == 0


def test_requests_are_counted_by_operation_and_outcome_with_their_duration(
        api, viewer, client):
    api.data("{ stats { queueDepth } }")
    api.data("{ stats { queueDepth } }")
    api.error('{ delivery(id: "abc") { id } }')
    viewer.error(PUBLISH)  # a viewer may not mutate
    api.error("{ stats { queueDepth } }", token="whk_unknown")
    api.error("{ nosuchfield }")
    found = _metrics(client)
    assert _value(found, "webhooks_api_requests_total", operation="stats", outcome="ok") == 2
    assert _value(found, "webhooks_api_requests_total", operation="delivery",
                  outcome="client_error") == 1
    assert _value(found, "webhooks_api_requests_total", operation="publishEvent",
                  outcome="client_error") == 1
    assert _value(found, "webhooks_api_requests_total", operation="none",
                  outcome="client_error") == 2  # no token; a field the schema lacks
    assert _value(found, "webhooks_api_request_duration_seconds_count", operation="stats") == 2
    assert _value(found, "webhooks_api_request_duration_seconds_sum", operation="stats") > 0
    assert ("webhooks_api_requests_total",
            frozenset({("operation", "nosuchfield"), ("outcome", "client_error")})) \
        not in found  # labels stay within the schema's fields


def test_events_published_through_the_api_are_counted_once(api, make, client):
    make.config(event_types=["a"])
    api.data(PUBLISH, {"id": "evt-1"})
    api.data(PUBLISH, {"id": "evt-1"})  # the same id again stores nothing new
    api.data(PUBLISH, {"id": "evt-2"})
    found = _metrics(client)
    assert _value(found, "webhooks_ingested_events_total", source="api") == 2
    assert _value(found, "webhooks_api_requests_total", operation="publishEvent",
                  outcome="ok") == 3
