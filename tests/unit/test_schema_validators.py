"""The catalog's fast check of a payload (jsonschema-rs) agrees with its reference (jsonschema)
on what is valid, over generated payloads and schemas of draft 2020-12's common keywords: the
fast one lets a payload through without the reference, so they must not disagree."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from db import catalog

SCHEMAS = [
    {"type": "object", "required": ["a"], "additionalProperties": False,
     "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 10},
                    "b": {"type": "string", "pattern": "^x+$", "maxLength": 3},
                    "c": {"type": "array", "items": {"type": "number"}, "uniqueItems": True,
                          "maxItems": 2}}},
    {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"},
               {"type": "object", "properties": {"k": {"enum": [1, "1", True]}}}]},
    {"type": "object", "patternProperties": {"^n_": {"type": "number", "multipleOf": 0.5}},
     "propertyNames": {"maxLength": 4}, "minProperties": 1,
     "dependentRequired": {"a": ["b"]}},
    {"type": "array", "prefixItems": [{"const": 1}, {"type": "boolean"}], "items": False,
     "contains": {"type": "boolean"}},
    {"type": "string", "format": "email"},
    {"not": {"type": "object", "required": ["bad"]}, "if": {"type": "number"},
     "then": {"exclusiveMinimum": 0}, "else": {"type": ["object", "string"]}},
]
KEYS = st.sampled_from(["a", "b", "c", "k", "n_1", "n_x", "bad", "long_key"])
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([0.5, 1.0, 1.25]),
              st.sampled_from(["", "x", "xx", "xxxx", "1", "a@b", "no email"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(KEYS, inner, max_size=4)), max_leaves=8)


@settings(max_examples=300)
@given(st.sampled_from(range(len(SCHEMAS))), VALUES)
def test_the_fast_check_and_the_reference_agree(index, payload):
    text = json.dumps(SCHEMAS[index], separators=(",", ":"), sort_keys=True)
    fast = catalog._fast_validator("t", index + 1, text)
    reference = catalog._validator("t", index + 1, text)
    assert fast.is_valid(payload) == reference.is_valid(payload), (SCHEMAS[index], payload)
    assert (catalog.violation(text, "t", index + 1, payload) is None) == \
        reference.is_valid(payload)
