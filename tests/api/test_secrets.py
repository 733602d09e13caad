"""After creation, no secret or token comes back: not in output, errors or logs."""

from __future__ import annotations

import logging

from tests.helpers import wait_until
from tests.receivers import Reply
from tests.reliability.secrets import CONFIG_FIELDS, leaked


def test_secrets_are_shown_once_and_never_again(api, viewer, make, receiver_factory,
                                                start_worker, caplog, operator_token,
                                                viewer_token):
    caplog.set_level(logging.DEBUG)
    receiver = receiver_factory(lambda request: Reply(500, body=request.headers[
        "webhook-signature"].encode()))  # an endpoint that echoes what it got
    created = api.data(
        "mutation ($e: String!) { createConfig(input: {endpoint: $e, eventTypes: [\"s\"]})"
        f" {{ config {{ {CONFIG_FIELDS} }} secret }} }}", {"e": receiver.url})["createConfig"]
    first_secret, config_id = created["secret"], created["config"]["id"]
    rotated = api.data(
        f'mutation {{ rotateConfigSecret(id: "{config_id}") {{ config {{ id }} secret }} }}')
    second_secret = rotated["rotateConfigSecret"]["secret"]
    custom = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
    api.data('mutation ($s: String!) { createConfig(input: {endpoint: "http://127.0.0.1:9/x",'
             ' eventTypes: ["s"], secret: $s}) { config { id } } }', {"s": custom})
    published = api.data('mutation { publishEvent(input: {type: "s", payload: {a: 1}})'
                         " { deliveryIds } }")
    start_worker(min_backoff=3600.0)
    delivery_ids = published["publishEvent"]["deliveryIds"]
    receiver.wait_for(1)
    for delivery_id in delivery_ids:
        wait_until(lambda d=delivery_id: make.row(int(d))["attempt_count"] == 1)

    outputs = [
        viewer.post(f"{{ configs {{ edges {{ node {{ {CONFIG_FIELDS} }} }} }} }}").data,
        viewer.post(f'{{ config(id: "{config_id}") {{ {CONFIG_FIELDS} }} }}').data,
        viewer.post("{ deliveries { edges { node { id lastError } } } }").data,
        *[viewer.post(f'{{ delivery(id: "{d}") {{ payload lastError attempts {{ endpoint '
                      "error responseExcerpt } } }").data for d in delivery_ids],
        api.post('mutation { createConfig(input: {endpoint: "http://127.0.0.1:9/x",'
                 ' eventTypes: ["s"], secret: "whsec_bad!"}) { secret } }').data,
        api.post('mutation { rotateConfigSecret(id: "nope", secret: "whsec_bad!") '
                 "{ secret } }").data,
    ]
    text = b"\n".join(outputs).decode() + caplog.text
    assert leaked(text, [first_secret, second_secret, custom, operator_token, viewer_token]) == []
    # what the endpoint echoed is its own business: it holds signatures, never a secret
    assert "v1," in text
