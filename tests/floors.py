"""Print the oldest versions setup.cfg allows of the libraries whose internals the code builds
on, as pip requirements: `python -m tests.floors` (CI installs them beside the venv and runs
those parts' tests on them).

The dispatcher's transport overrides requests' adapter hooks and subclasses urllib3's
connection classes; the Kafka consumer replaces kafka-python's fetcher to read committed
messages only. Each of those leans on more than a library's documented surface, so its
floor is checked, not assumed.
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

SETUP_CFG = Path(__file__).resolve().parents[1] / "setup.cfg"
EXTENDED = ("requests", "urllib3", "kafka-python")


def floors(setup_cfg: Path = SETUP_CFG) -> dict[str, str]:
    """Return each extended library's lowest allowed version (`>=` in install_requires)."""
    parser = configparser.ConfigParser()
    parser.read(setup_cfg)
    found = {}
    for line in parser["options"]["install_requires"].split():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][^,]*)(,.*)?", line.strip())
        if match and match.group(1) in EXTENDED:
            found[match.group(1)] = match.group(2)
    missing = set(EXTENDED) - set(found)
    if missing:
        raise SystemExit(f"setup.cfg gives no floor (>=) for {', '.join(sorted(missing))}")
    return found


if __name__ == "__main__":
    print(" ".join(f"{name}=={version}" for name, version in floors().items()))
    sys.exit(0)
