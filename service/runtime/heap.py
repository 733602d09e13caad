"""Keep the garbage collector's full passes short in the long-running processes.

A full (oldest-generation) collection scans every object the collector tracks, and start-up
leaves about 90,000 of them behind (modules, the GraphQL schema, the OpenTelemetry SDK) that
live as long as the process. In the web process a full pass came every ≈ 190 API requests and
took 50 to 85 ms, which was the API's p99 (bench/RESULTS.md). Frozen once start-up is done, they
are never scanned again and the same pass takes 3 to 8 ms. Garbage made later is collected as
before.
"""

import gc


def freeze_startup_objects() -> None:
    """Collect what start-up left as garbage, then exempt the survivors from later passes."""
    gc.collect()
    gc.freeze()
