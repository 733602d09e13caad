from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from db.rows import as_dict, as_dicts, as_type


@dataclass(frozen=True)
class Row:
    id: int
    name: str
    note: str | None = None


class FakeCursor:
    def __init__(self, names, rows):
        self.description = [SimpleNamespace(name=name) for name in names]
        self._rows = list(rows)

    def fetchall(self):
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None


def test_rows_are_keyed_by_column_name():
    cursor = FakeCursor(["name", "id"], [("a", 1), ("b", 2)])
    assert as_dict(cursor) == {"name": "a", "id": 1}
    assert as_dicts(cursor) == [{"name": "b", "id": 2}]
    assert as_dict(cursor) is None


def test_a_type_takes_the_columns_named_as_its_fields_whatever_their_order():
    assert as_type(Row, {"name": "a", "woken": 1, "id": 7}) == Row(7, "a")
    assert as_type(Row, {"id": 7, "name": "a", "note": "n"}) == Row(7, "a", "n")


def test_given_values_win_over_columns():
    assert as_type(Row, {"id": 7, "name": "a"}, name="b") == Row(7, "b")


def test_a_field_without_a_column_or_default_raises():
    with pytest.raises(TypeError):
        as_type(Row, {"id": 7})
