"""Load the named statements of `db/queries/*.sql` once, and look them up by name.

A file holds statements, each under a header line `-- name --` followed by a one-line
`-- description` comment. A statement may include another by name with `/* include NAME */`
(for what several statements share: the conditions of a filter, the columns of a listing, a
transition such as a replay or a hand-back).
"""

from __future__ import annotations

import re
from pathlib import Path

QUERIES_DIR = Path(__file__).with_name("queries")
_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)
_INCLUDE = re.compile(r"/\* include (\w+) \*/")


def parse(text: str, origin: str = "<sql>") -> dict[str, str]:
    """Return {name: statement} of one file's text."""
    parts = _HEADER.split(text)
    if parts[0].strip():
        raise ValueError(f"{origin}: text before the first `-- name --` header")
    statements: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.strip().splitlines()
        if not lines or not lines[0].startswith("-- "):
            raise ValueError(f"{origin}: {name} needs a one-line `-- description`")
        statement = "\n".join(lines[1:]).strip()
        if not statement:
            raise ValueError(f"{origin}: {name} is empty")
        if name in statements:
            raise ValueError(f"{origin}: {name} defined twice")
        statements[name] = statement
    return statements


def load(directory: Path = QUERIES_DIR) -> dict[str, str]:
    """Return every named statement under `directory`; names are unique across files."""
    statements: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        for name, statement in parse(path.read_text(), path.name).items():
            if name in statements:
                raise ValueError(f"{path.name}: {name} already defined in another file")
            statements[name] = statement
    return expand(statements)


def expand(statements: dict[str, str]) -> dict[str, str]:
    """Return `statements` with each `/* include NAME */` replaced by the statement NAME (which
    may include others in turn, never itself)."""

    def expanded(name: str, within: tuple[str, ...]) -> str:
        if name not in statements:
            raise ValueError(f"include of unknown statement {name}")
        if name in within:
            raise ValueError(f"{name} includes itself: {' -> '.join((*within, name))}")
        return _INCLUDE.sub(lambda match: expanded(match.group(1), (*within, name)),
                            statements[name])

    return {name: expanded(name, ()) for name in statements}


QUERIES = load()
NAMES = {statement: name for name, statement in QUERIES.items()}  # to say what failed
