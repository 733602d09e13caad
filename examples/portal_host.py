"""A platform's account page that embeds a tenant's webhook portal: the server mints a portal
session with a platform token, the page shows it in an iframe and mints a new one when the
portal says its session ended.

    WEBHOOKS_URL=https://hooks.example.com WEBHOOKS_TOKEN=whk_... TENANT=cus_42 \\
        python examples/portal_host.py
"""

import html
import json
import os

import requests
from flask import Flask

WEBHOOKS_URL = os.environ["WEBHOOKS_URL"]  # the service's origin, as the browser reaches it
MINT = "mutation ($tenant: String!) { createPortalSession(tenant: $tenant) { url } }"
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Account</title>
<link rel="icon" href="data:,">
</head><body><h1>Webhooks</h1>
<iframe id="portal" title="Webhooks" src="{src}" width="100%" height="900"></iframe>
<script>
window.addEventListener("message", (event) => {{
  if (event.origin === {origin} && event.data.type === "webhooks.portal.session-expired") {{
    location.reload();  // this page mints a new session
  }}
}});
</script></body></html>"""

app = Flask(__name__)


@app.get("/")
def account():
    tenant = os.environ["TENANT"]  # in a product: the signed-in customer's own tenant uid
    answer = requests.post(f"{WEBHOOKS_URL}/graphql", timeout=10,
                           json={"query": MINT, "variables": {"tenant": tenant}},
                           headers={"Authorization": f"Bearer {os.environ['WEBHOOKS_TOKEN']}"})
    url = answer.json()["data"]["createPortalSession"]["url"]
    themed = url.replace("#", "&accent=%230f766e#", 1)  # theme parameters go before the #
    return PAGE.format(src=html.escape(themed), origin=json.dumps(WEBHOOKS_URL))


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")))
