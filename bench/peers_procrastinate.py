"""The procrastinate peer (a PostgreSQL task queue), run as
`procrastinate --app bench.peers_procrastinate.app worker`.
"""

import os

from procrastinate import App, PsycopgConnector

app = App(connector=PsycopgConnector(conninfo=os.environ.get("BENCH_PEER_DSN", "")))


@app.task(name="deliver", pass_context=False)
def deliver(delivery_id: str, endpoint: str, body: str) -> int:
    from bench.peer_task import deliver as run

    return run(delivery_id, endpoint, body)
