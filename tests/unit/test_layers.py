"""The layers of the tree, checked on its imports: wsgi.py -> service/ -> graphql_schema/ ->
db/, no arrow running up, the driver below the service, policy that imports nothing of ours.
(docs/architecture.md draws the picture.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("service", "graphql_schema", "db")
DRIVER = ("psycopg2", "psycogreen")
# The one module above db/ that touches the driver: gevent's patch of psycopg2 must run first
# thing in every entry point, before db/ (which loads the driver) can be imported.
DRIVER_ALLOWED = {"service/patch.py"}
# What a pure policy module may import of ours: other policy, the vocabulary's constants.
POLICY_ALLOWED = ("service.policy", "db.vocabulary")


def imports(path: Path) -> set[str]:
    """Return every module `path` imports (absolute names; ours are never relative)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def ours(names: set[str], package: str) -> set[str]:
    return {name for name in names if name == package or name.startswith(f"{package}.")}


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", modules("db"), ids=relative)
def test_db_imports_nothing_of_ours(path):
    found = imports(path)
    assert not ours(found, "service") | ours(found, "graphql_schema") | ours(found, "tests")


@pytest.mark.parametrize("path", modules("graphql_schema"), ids=relative)
def test_the_api_imports_only_db(path):
    found = imports(path)
    assert not ours(found, "service") | ours(found, "tests") | ours(found, "wsgi")


@pytest.mark.parametrize("path", modules("service") + modules("graphql_schema")
                         + [ROOT / "wsgi.py"], ids=relative)
def test_no_module_above_db_touches_the_driver(path):
    if relative(path) in DRIVER_ALLOWED:
        return
    found = imports(path)
    assert not {name for name in found if name.split(".")[0] in DRIVER}


@pytest.mark.parametrize("path", modules("service"), ids=relative)
def test_the_service_never_imports_tests_or_benchmarks(path):
    found = imports(path)
    assert not ours(found, "tests") | ours(found, "bench")


@pytest.mark.parametrize("path", sorted((ROOT / "service" / "policy").glob("*.py")),
                         ids=relative)
def test_policy_imports_nothing_of_ours(path):
    found = {name for package in PACKAGES for name in ours(imports(path), package)}
    assert {name for name in found if not name.startswith(POLICY_ALLOWED)} == set()


@pytest.mark.parametrize("path", modules("tests"), ids=relative)
def test_no_test_imports_the_benchmarks(path):
    assert not ours(imports(path), "bench")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_of_ours_import_each_other_in_a_cycle():
    """A cycle (as `service.cli` <-> `service.commands` once was) makes import order matter and
    the layers unreadable: none, of any length."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in modules(package):
            graph[_module_name(path)] = set()
    for package in PACKAGES:
        for path in modules(package):
            name = _module_name(path)
            found = {imported for imported in imports(path) if imported in graph}
            # `from service.commands import registry` imports the module, not its package
            packages = {imported.rsplit(".", 1)[0] for imported in found if "." in imported}
            graph[name] = {imported for imported in found
                           if imported != name and not (imported in packages and any(
                               other.startswith(imported + ".") for other in found))}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name: str, path: list[str]) -> None:
        state[name] = 1
        for imported in sorted(graph[name]):
            if state.get(imported) == 1:
                cycle = [*path[path.index(imported):], imported] if imported in path else path
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if imported not in state:
                walk(imported, [*path, imported])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])


STATUS_WORDS = ("'pending'", '"pending"', "'delivering'", '"delivering"', "'succeeded'",
                '"succeeded"', "'cancelled'", '"cancelled"')


# Where these words are not delivery statuses.
NOT_STATUSES = {
    "db/vocabulary.py": "it defines them",
    "service/policy/classify.py": "its verdicts ('succeeded', 'retry', 'fail')",
    "service/commands/stats.py": "the API's JSON field names",
}


@pytest.mark.parametrize("path", [p for package in PACKAGES for p in modules(package)
                                  if relative(p) not in NOT_STATUSES], ids=relative)
def test_delivery_statuses_are_named_through_the_vocabulary_not_spelled(path):
    """Statuses are `db.vocabulary.Status` members in Python (SQL files spell them, as the
    column's check constraint does)."""
    text = path.read_text()
    assert not [word for word in STATUS_WORDS if word in text], relative(path)
