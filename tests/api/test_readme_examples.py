"""The GraphQL requests the README shows work against the API as written."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_readmes_curl_bodies_succeed(api):
    bodies = re.findall(r"-d '(\{.*?\})'", README, re.DOTALL)
    assert bodies, "the README shows no GraphQL request"
    for body in bodies:
        response = api.client.post("/graphql", data=body, content_type="application/json",
                                   headers={"Authorization": f"Bearer {api.token}"})
        assert response.status_code == 200, response.get_data(as_text=True)
        assert "errors" not in response.get_json(), (body, response.get_json())
