"""A config's filter on the events it receives: a small JSON match language over the dotted
paths of an event's payload, with the semantics of MongoDB's query operators (`$eq $ne $gt
$gte $lt $lte $in $nin $exists $regex $and $or $not`, an object's fields implicitly and-ed, a
plain value an implicit `$eq`). docs/filters.md states the language exactly.

Pure: no clock, database or network. `check` reads a filter as a caller gives it (raising
InvalidInput that names the offending place in it); `compiled` returns the checked filter of
a stored text, parsed once per text; a Filter's `matches` is what the fan-out asks and its
`explain` says why.
"""

from db.event_filter.filters import Filter, Verdict, check, compiled

__all__ = ["Filter", "Verdict", "check", "compiled"]
