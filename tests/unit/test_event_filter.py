"""The filter language of configs: MongoDB's query operators over an event's payload.

The semantics are stated as cases (docs/filters.md gives the same ones), then as properties
over generated filters and payloads: the operators that MongoDB defines by others agree with
them, a filter read back from its stored text behaves as the one checked, an explanation
never disagrees with the verdict, and nothing a caller can send makes the checker fail in any
other way than a BAD_USER_INPUT naming the place.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db.errors import InvalidInput
from db.event_filter import check, compiled
from db.event_filter.filters import MAX_FILTER_BYTES
from db.event_filter.parse import MAX_DEPTH
from db.event_filter.patterns import MAX_PATTERN_LENGTH, MAX_PATTERNS

ORDER = {
    "id": "in_1",
    "amount": 150,
    "currency": "EUR",
    "paid": True,
    "note": None,
    "customer": {"id": "cus_1", "country": "FR", "tags": ["vip", "eu"]},
    "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 5}],
    "scores": [1, 7, 12],
    "matrix": [[1, 2], [3]],
    "created": "2026-12-03T10:00:00Z",
}


def matches(filter, document=ORDER) -> bool:
    verdict = check(filter).explain(document)
    assert verdict.matched == check(filter).matches(document)
    return verdict.matched


CASES = [
    # implicit equality, and implicit $and of an object's fields
    ({"currency": "EUR"}, True),
    ({"currency": "USD"}, False),
    ({"currency": "EUR", "amount": 150}, True),
    ({"currency": "EUR", "amount": 151}, False),
    ({}, True),
    # dotted paths into objects and through arrays of objects
    ({"customer.country": "FR"}, True),
    ({"lines.sku": "b"}, True),
    ({"lines.sku": "c"}, False),
    ({"lines.1.sku": "b"}, True),
    ({"lines.0.sku": "b"}, False),
    ({"lines.9.sku": {"$exists": True}}, False),
    ({"customer.tags.0": "vip"}, True),
    # an array field equals one of its elements, or itself whole (in order)
    ({"customer.tags": "eu"}, True),
    ({"customer.tags": ["vip", "eu"]}, True),
    ({"customer.tags": ["eu", "vip"]}, False),
    ({"matrix": [3]}, True),
    ({"matrix": 3}, False),  # one level only: an array inside an array is compared whole
    # objects compare field by field, in any order
    ({"customer": {"tags": ["vip", "eu"], "country": "FR", "id": "cus_1"}}, True),
    ({"customer": {"country": "FR"}}, False),
    ({"lines": {"$eq": {"qty": 5, "sku": "b"}}}, True),
    # kinds: a number never equals a string or a boolean; 1 and 1.0 are one number
    ({"amount": "150"}, False),
    ({"amount": 150.0}, True),
    ({"paid": 1}, False),
    ({"paid": True}, True),
    # null: a null value, or nothing at the path
    ({"note": None}, True),
    ({"missing": None}, True),
    ({"currency": None}, False),
    ({"missing": {"$ne": None}}, False),
    ({"note": {"$exists": True}}, True),
    ({"missing": {"$exists": False}}, True),
    ({"missing.deeper": {"$exists": False}}, True),
    ({"amount.deeper": {"$exists": True}}, False),
    # $ne and $nin hold for a missing field, and fail when any element equals
    ({"missing": {"$ne": 5}}, True),
    ({"currency": {"$ne": "EUR"}}, False),
    ({"scores": {"$ne": 7}}, False),
    ({"scores": {"$nin": [2, 3]}}, True),
    ({"scores": {"$nin": [2, 12]}}, False),
    ({"missing": {"$nin": [1]}}, True),
    # $in: any value equals any element; null in it matches a missing field
    ({"currency": {"$in": ["USD", "EUR"]}}, True),
    ({"currency": {"$in": []}}, False),
    ({"missing": {"$in": [None, 1]}}, True),
    ({"customer.tags": {"$in": ["eu"]}}, True),
    # orders compare numbers with numbers and strings with strings, never across kinds
    ({"amount": {"$gt": 100}}, True),
    ({"amount": {"$gt": 150}}, False),
    ({"amount": {"$gte": 150}}, True),
    ({"amount": {"$lt": 150.5}}, True),
    ({"amount": {"$lte": 149}}, False),
    ({"amount": {"$gt": "100"}}, False),
    ({"currency": {"$gt": 1}}, False),
    ({"currency": {"$gte": "EUR", "$lt": "USD"}}, True),
    ({"created": {"$gte": "2026-12-01", "$lt": "2026-12-04"}}, True),
    ({"missing": {"$lt": 1}}, False),
    ({"paid": {"$gt": 0}}, False),
    # several operators on one array field hold each for some element, not one for all
    ({"scores": {"$gt": 10, "$lt": 5}}, True),
    ({"scores": {"$gt": 12}}, False),
    # $regex: RE2, a search anywhere in a string (or a string element), with $options
    ({"currency": {"$regex": "^E"}}, True),
    ({"currency": {"$regex": "^e"}}, False),
    ({"currency": {"$regex": "^e", "$options": "i"}}, True),
    ({"customer.tags": {"$regex": "^e"}}, True),
    ({"amount": {"$regex": "150"}}, False),
    ({"missing": {"$regex": ""}}, False),
    # $not: the negation of its operators, so a missing field passes it
    ({"amount": {"$not": {"$gt": 200}}}, True),
    ({"amount": {"$not": {"$gt": 100}}}, False),
    ({"missing": {"$not": {"$gt": 1}}}, True),
    ({"amount": {"$not": {"$gt": 100, "$lt": 120}}}, True),
    # $and and $or, nested
    ({"$and": [{"currency": "EUR"}, {"amount": {"$gt": 100}}]}, True),
    ({"$and": [{"currency": "EUR"}, {"amount": {"$gt": 200}}]}, False),
    ({"$or": [{"currency": "USD"}, {"amount": {"$gt": 100}}]}, True),
    ({"$or": [{"currency": "USD"}, {"customer.country": "US"}]}, False),
    ({"$or": [{"$and": [{"paid": True}, {"lines.qty": {"$gte": 5}}]}, {"id": "x"}],
      "currency": "EUR"}, True),
]


@pytest.mark.parametrize(("filter", "expected"), CASES, ids=[json.dumps(f) for f, _ in CASES])
def test_the_semantics_of_each_operator(filter, expected):
    assert matches(filter) is expected


def test_a_payload_that_is_not_an_object_is_reached_as_any_value():
    assert matches({"a": {"$exists": False}}, [1, 2])
    assert matches({"0": 1}, [1, 2])  # an index into a payload that is an array
    assert not matches({"a": {"$exists": True}}, "text")
    assert matches({}, "text")


def test_explanations_say_what_was_found_and_which_condition_decided():
    verdict = check({"amount": {"$gt": 200}, "currency": "EUR"}).explain(ORDER)
    assert not verdict.matched
    assert verdict.reason == 'amount is 150, which fails {"$gt": 200}'
    verdict = check({"customer.vip": {"$exists": True}}).explain(ORDER)
    assert verdict.reason == 'customer.vip is missing, which fails {"$exists": true}'
    verdict = check({"lines.sku": {"$in": ["a"]}}).explain(ORDER)
    assert verdict.matched
    assert verdict.reason == 'lines.sku is "a", "b" (through arrays), which satisfies ' \
                             '{"$in": ["a"]}'
    verdict = check({"$or": [{"currency": "USD"}, {"paid": False}]}).explain(ORDER)
    assert verdict.reason == ('$or: no branch holds: (currency is "EUR", which fails '
                              '{"$eq": "USD"}); (paid is true, which fails {"$eq": false})')
    assert check({}).explain(ORDER).reason == "an empty filter matches every event"
    regex = check({"currency": {"$regex": "^u", "$options": "i"}}).explain(ORDER)
    assert regex.reason == 'currency is "EUR", which fails {"$regex": "^u", "$options": "i"}'


BAD = [
    ([1], "filter: a filter is a JSON object of fields and $and/$or"),
    ({"$gt": 1}, 'filter.$gt: $gt applies to a field: write {"field": {"$gt": …}}'),
    ({"$nor": []}, "filter.$nor: unknown operator $nor; the operators here are $and, $or, "),
    ({"$and": []}, "filter.$and: $and takes a non-empty array of filters"),
    ({"$or": {"a": 1}}, "filter.$or: $or takes a non-empty array of filters"),
    ({"$and": [{"a": 1}, 5]}, "filter.$and[1]: a filter is a JSON object"),
    ({"$and": [{"a": 1}, {"b": {"$gtt": 1}}]},
     "filter.$and[1].b.$gtt: unknown operator $gtt; the operators here are $eq"),
    ({"a": {"$and": [{"b": 1}]}}, "filter.a.$and: $and combines filters: it stands at a "
                                  "filter's top level"),
    ({"a": {"$gt": 1, "b": 2}}, "filter.a.b: an object of operators holds operators only"),
    ({"a": {"$gt": None}}, "filter.a.$gt: $gt takes a number or a string, not null"),
    ({"a": {"$lte": True}}, "filter.a.$lte: $lte takes a number or a string, not a boolean"),
    ({"a": {"$lt": [1]}}, "filter.a.$lt: $lt takes a number or a string, not an array"),
    ({"a": {"$in": "x"}}, "filter.a.$in: $in takes an array of values, not a string"),
    ({"a": {"$nin": {}}}, "filter.a.$nin: $nin takes an array of values, not an object"),
    ({"a": {"$exists": 1}}, "filter.a.$exists: $exists takes true or false, not a number"),
    ({"a": {"$regex": 1}}, "filter.a.$regex: $regex takes a string, not a number"),
    ({"a": {"$regex": "("}}, "filter.a.$regex: not a valid regular expression (RE2 syntax): "
                             "missing ): ("),
    ({"a": {"$regex": r"(a)\1"}}, "filter.a.$regex: not a valid regular expression (RE2 "
                                  "syntax): invalid escape sequence: \\1"),
    ({"a": {"$regex": "(?=a)b"}}, "filter.a.$regex: not a valid regular expression (RE2 "
                                  "syntax): invalid perl operator: (?="),
    ({"a": {"$regex": "x" * (MAX_PATTERN_LENGTH + 1)}},
     f"filter.a.$regex: a pattern has at most {MAX_PATTERN_LENGTH} characters"),
    ({"a": {"$regex": "(\\pL{999}){999}"}}, "filter.a.$regex: "),
    ({"a": {"$regex": "a", "$options": "x"}}, "filter.a.$options: unknown option 'x'"),
    ({"a": {"$regex": "a", "$options": 1}}, "filter.a.$options: $options takes a string"),
    ({"a": {"$options": "i"}}, "filter.a.$options: $options goes with $regex"),
    ({"a": {"$not": 5}}, 'filter.a.$not: $not takes an object of operators, e.g.'),
    ({"a": {"$not": {}}}, "filter.a.$not: $not takes an object of operators"),
    ({"a": {"$not": {"b": 1}}}, "filter.a.$not: $not takes an object of operators"),
    ({"a": {"$not": {"$eq": 1, "$foo": 2}}}, "filter.a.$not.$foo: unknown operator $foo"),
    ({"": 1}, 'filter[""]: a field path is not empty'),
    ({"a b": {"$in": 1}}, 'filter["a b"].$in: $in takes an array'),
    ({"a..b": 1}, "filter.a..b: a field path has no empty segment"),
    ({"a.$b": 1}, "filter.a.$b: a field path's segment does not start with $"),
    ({"a": float("nan")}, "filter: not representable as JSON"),
    ({"a": {"$in": [1, float("inf")]}}, "filter: not representable as JSON"),
    ({"a": "x" * MAX_FILTER_BYTES}, f"filter: {MAX_FILTER_BYTES + 8} bytes is over the "
                                    f"limit of {MAX_FILTER_BYTES} bytes"),
]


@pytest.mark.parametrize(("filter", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_a_wrong_filter_is_refused_naming_the_place_and_the_rule(filter, message):
    with pytest.raises(InvalidInput) as refused:
        check(filter)
    assert str(refused.value).startswith(message), str(refused.value)


def test_cost_bounds_depth_and_patterns():
    deep: dict = {"a": 1}
    for _ in range(MAX_DEPTH):
        deep = {"$and": [deep]}
    check(deep)
    nested_too_deep = r"^filter\.\$or\[0\](\.\$and\[0\])+: filters nest at most"
    with pytest.raises(InvalidInput, match=nested_too_deep):
        check({"$or": [deep]})
    many = {f"f{n}": {"$regex": "a"} for n in range(MAX_PATTERNS)}
    check(many)
    with pytest.raises(InvalidInput, match=f"^filter.x.\\$regex: a filter has at most "
                                           f"{MAX_PATTERNS} \\$regex"):
        check({**many, "x": {"$regex": "a"}})


def test_a_pattern_that_backtracks_exponentially_elsewhere_runs_in_linear_time():
    # (a+)+$ on "aaa…!" takes exponential time in a backtracking engine: RE2 has none.
    subject = {"s": "a" * 200_000 + "!"}
    assert not check({"s": {"$regex": "(a+)+$"}}).matches(subject)
    assert check({"s": {"$regex": "(a|aa)*!"}}).matches(subject)


# --- properties over generated filters and payloads ---------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    st.sampled_from([0.5, 1.0, -2.0]), st.sampled_from(["", "x", "y", "X"]))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)
DOCUMENTS = st.dictionaries(KEYS, JSON_VALUES, max_size=3)
PATHS = st.lists(st.one_of(KEYS, st.sampled_from(["0", "1"])), min_size=1,
                 max_size=3).map(".".join).filter(lambda p: not p[0].isdigit())
ORDERABLE = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -2.0]),
                      st.sampled_from(["", "x", "y"]))


def _operators(depth: int):
    simple = st.one_of(
        st.builds(lambda v: {"$eq": v}, JSON_VALUES),
        st.builds(lambda v: {"$ne": v}, JSON_VALUES),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$gt", "$gte", "$lt", "$lte"]),
                  ORDERABLE),
        st.builds(lambda op, vs: {op: vs}, st.sampled_from(["$in", "$nin"]),
                  st.lists(JSON_VALUES, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.builds(lambda p, o: {"$regex": p, "$options": o},
                  st.sampled_from(["x", "^x$", "X|y", "^$", "."]), st.sampled_from(["", "i"])),
    )
    if depth == 0:
        return simple
    return st.one_of(simple, st.builds(lambda ops: {"$not": ops}, _operators(depth - 1)))


FIELD_TESTS = st.one_of(JSON_VALUES.filter(
    lambda v: not (isinstance(v, dict) and any(k.startswith("$") for k in v))),
    st.lists(_operators(1), min_size=1, max_size=2).map(
        lambda ops: {k: v for op in ops for k, v in op.items()}))
FILTERS = st.recursive(
    st.dictionaries(PATHS, FIELD_TESTS, max_size=3),
    lambda inner: st.one_of(
        st.builds(lambda fs: {"$and": fs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda fs: {"$or": fs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda f, g: {**f, **g}, st.dictionaries(PATHS, FIELD_TESTS, max_size=2),
                  st.builds(lambda fs: {"$or": fs}, st.lists(inner, min_size=1, max_size=2)))),
    max_leaves=6)


@settings(max_examples=50)  # each example is a few generated filters
@given(FILTERS, DOCUMENTS)
def test_an_explanation_agrees_with_the_verdict_and_the_stored_text_with_the_check(filter,
                                                                                   doc):
    checked = check(filter)
    assert checked.explain(doc).matched == checked.matches(doc)
    assert compiled(checked.text).matches(doc) == checked.matches(doc)
    assert json.loads(checked.text) == filter


@given(PATHS, JSON_VALUES, DOCUMENTS)
def test_ne_is_not_eq_and_an_implicit_value_is_eq(path, value, doc):
    eq = matches({path: {"$eq": value}}, doc)
    assert matches({path: {"$ne": value}}, doc) is not eq
    if not (isinstance(value, dict) and any(k.startswith("$") for k in value)):
        assert matches({path: value}, doc) is eq


@given(PATHS, st.lists(JSON_VALUES, max_size=4), DOCUMENTS)
def test_in_is_any_eq_and_nin_is_none(path, values, doc):
    some = any(matches({path: {"$eq": v}}, doc) for v in values)
    assert matches({path: {"$in": values}}, doc) is some
    assert matches({path: {"$nin": values}}, doc) is not some


@given(PATHS, ORDERABLE, DOCUMENTS)
def test_gte_is_gt_or_an_equal_value_of_the_same_kind(path, bound, doc):
    assert matches({path: {"$gte": bound}}, doc) is (
        matches({path: {"$gt": bound}}, doc) or matches({path: {"$eq": bound}}, doc))
    assert matches({path: {"$lte": bound}}, doc) is (
        matches({path: {"$lt": bound}}, doc) or matches({path: {"$eq": bound}}, doc))


@given(KEYS, ORDERABLE, SCALARS)
def test_an_order_on_a_scalar_field_is_pythons_within_one_kind(path, bound, value):
    doc = {path: value}
    same_kind = (isinstance(value, str) == isinstance(bound, str)
                 and value is not None and not isinstance(value, bool))
    assert matches({path: {"$gt": bound}}, doc) is (same_kind and value > bound)
    assert matches({path: {"$lt": bound}}, doc) is (same_kind and value < bound)


@given(st.lists(_operators(1), min_size=1, max_size=3), PATHS, DOCUMENTS)
def test_not_is_the_negation_of_all_its_operators_and_an_object_is_their_and(ops, path, doc):
    merged = {k: v for op in ops for k, v in op.items()}
    alone = [{"$regex": v, "$options": merged.get("$options", "")} if k == "$regex" else {k: v}
             for k, v in merged.items() if k != "$options"]
    assert matches({path: merged}, doc) is all(matches({path: one}, doc) for one in alone)
    assert matches({path: {"$not": merged}}, doc) is not matches({path: merged}, doc)


@settings(max_examples=50)  # each example is a few generated filters
@given(st.lists(FILTERS, min_size=1, max_size=3), DOCUMENTS)
def test_and_is_all_and_or_is_any(filters, doc):
    verdicts = [matches(f, doc) for f in filters]
    assert matches({"$and": filters}, doc) is all(verdicts)
    assert matches({"$or": filters}, doc) is any(verdicts)


@settings(max_examples=50)  # each example is a few generated filters
@given(st.dictionaries(PATHS, FIELD_TESTS, min_size=2, max_size=3), DOCUMENTS)
def test_the_fields_of_an_object_are_an_implicit_and(filter, doc):
    assert matches(filter, doc) is matches({"$and": [{k: v} for k, v in filter.items()]}, doc)


ANYTHING = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=5), st.sampled_from(["$eq", "$gt", "$in", "$regex", "$not",
                                                    "$and", "$or", "$exists", "$options",
                                                    "(", "a.b", "$x"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=4), st.sampled_from(
            ["$eq", "$gt", "$in", "$nin", "$regex", "$not", "$and", "$or", "$exists",
             "$options", "a", "a.b", "a..b", ".a", "$zz"])), inner, max_size=3)),
    max_leaves=10)


@given(ANYTHING, DOCUMENTS)
def test_anything_a_caller_sends_is_a_filter_or_a_refusal_naming_its_place(given_filter, doc):
    try:
        checked = check(given_filter)
    except InvalidInput as error:
        assert str(error).startswith("filter")
        return
    checked.explain(doc)
