from db import rejected
from db.rejected import Rejection


def test_rejections_are_stored_once_and_paged_newest_first(pool):
    items = [Rejection("t", 0, n, "not JSON", bytes([n, 0, 255])) for n in range(5)]
    with pool.transaction() as cursor:
        rejected.store(cursor, items)
        rejected.store(cursor, items[:2])
    assert rejected.count(pool) == 5
    first = rejected.page(pool, limit=3)
    assert [r.offset for r in first] == [4, 3, 2]
    assert first[0].raw == bytes([4, 0, 255])
    rest = rejected.page(pool, limit=3, after_id=first[-1].id)
    assert [r.offset for r in rest] == [1, 0]
