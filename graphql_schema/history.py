"""Shape attempt counts (by config, bucket and outcome) into the buckets and totals of a chart."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import strawberry

from db.inspection import AttemptHistory as HistoryRows
from db.rates import AttemptRate
from db.vocabulary import AttemptOutcome as OutcomeWord
from graphql_schema.types import AttemptBucket, AttemptHistory, ConfigAttempts, OutcomeCount


def window_start(now: datetime, span: timedelta, bucket: timedelta) -> datetime:
    """Return the start of the first of the whole buckets covering `span` up to `now`.

    Buckets start at multiples of `bucket` since the Unix epoch; the last one holds `now`.
    """
    size = bucket.total_seconds()
    current = now.timestamp() // size * size
    buckets = max(1, int(span.total_seconds() // size))
    return datetime.fromtimestamp(current - (buckets - 1) * size, UTC)


def config_totals(found: dict[str, AttemptRate],
                  names: dict[str, str | None]) -> list[ConfigAttempts]:
    """Return the configs with attempts among `found`, most attempts first."""
    configs = [ConfigAttempts(config_id=strawberry.ID(id), config_name=names.get(id),
                              attempts=rate.attempts, succeeded=rate.succeeded)
               for id, rate in found.items() if rate.attempts]
    configs.sort(key=lambda config: (-config.attempts, config.config_id))
    return configs


def summarise(rows: HistoryRows, *, since: datetime, bucket: timedelta,
              until: datetime) -> AttemptHistory:
    """Return every bucket from `since` to `until` (empty ones too) and each config's totals."""
    by_bucket: dict[datetime, Counter] = defaultdict(Counter)
    by_config: dict[str, Counter] = defaultdict(Counter)
    names: dict[str, str | None] = {}
    for row in rows.counts:
        by_bucket[row.bucket][row.outcome] += row.attempts
        by_config[row.config_id][row.outcome] += row.attempts
        names[row.config_id] = row.config_name
    buckets, start = [], since
    while start <= until:
        outcomes = by_bucket.get(start, Counter())
        buckets.append(AttemptBucket(
            start=start, attempts=sum(outcomes.values()), succeeded=outcomes[OutcomeWord.SUCCESS],
            outcomes=[OutcomeCount(outcome=o, count=n) for o, n in sorted(outcomes.items())]))
        start += bucket
    configs = [ConfigAttempts(config_id=strawberry.ID(id), config_name=names[id],
                              attempts=sum(counts.values()), succeeded=counts[OutcomeWord.SUCCESS])
               for id, counts in by_config.items()]
    configs.sort(key=lambda config: (-config.attempts, config.config_id))
    return AttemptHistory(since=since, bucket_seconds=int(bucket.total_seconds()),
                          buckets=buckets, configs=configs, complete=rows.complete)
