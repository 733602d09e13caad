"""Gauges of the queue, the configs' health and the Kafka consumer: set when measured, read
at each scrape or export."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from db.vocabulary import Status

QUEUE_DEPTH_CAP = 1_000_000


class Gauges:
    """The last measured values of one process's gauges."""

    def __init__(self, meter: Meter) -> None:
        self._health: dict[str, dict[str, int]] = {"in_flight": {}, "suppressed": {}}
        meter.create_observable_gauge(
            "webhooks_config_in_flight", callbacks=[self._observe("in_flight", "config_id")],
            description="This worker's claims in flight per config (sum over the workers for "
                        "the fleet's)")
        meter.create_observable_gauge(
            "webhooks_suppressed_attempts",
            callbacks=[self._observe("suppressed", "state")],
            description="Due deliveries not attempted because their config is paused or its "
                        f"circuit is open or half-open, by state (capped at {QUEUE_DEPTH_CAP:,})")
        self._queue: dict[str, int] | None = None
        self._oldest_due_age: float = 0.0
        self._kafka_lag: dict[tuple[str, int], int] = {}
        self._kafka_stalled: set[tuple[str, int]] = set()
        meter.create_observable_gauge(
            "webhooks_retry_queue_depth", callbacks=[self._observe_queue_depth],
            description=f"Pending deliveries (capped at {QUEUE_DEPTH_CAP:,})")
        meter.create_observable_gauge(
            "webhooks_deliveries", callbacks=[self._observe_deliveries],
            description=f"Deliveries by status (each capped at {QUEUE_DEPTH_CAP:,})")
        meter.create_observable_gauge(
            "webhooks_oldest_due_delivery_age_seconds", unit="s",
            callbacks=[self._observe_oldest_due_age],
            description="How long the longest-waiting config that could be sent to now has "
                        "waited; held deliveries never count (0: nothing could be sent)")
        self._blocked_keys: int | None = None
        meter.create_observable_gauge(
            "webhooks_blocked_ordering_keys", callbacks=[self._observe_blocked_keys],
            description="Ordering keys held by a failed delivery (ordered configs with "
                        "blockOnFailure): nothing later of them is sent until it is replayed "
                        "and succeeds, or skipped")
        meter.create_observable_gauge(
            "webhooks_kafka_consumer_lag", callbacks=[self._observe_kafka_lag],
            description="Messages of a partition not yet stored and committed by this worker")
        meter.create_observable_gauge(
            "webhooks_kafka_stalled_partitions", callbacks=[self._observe_kafka_stalled],
            description="1 for each Kafka partition held because its next batch cannot be "
                        "decoded")

    def health(self, *, in_flight: Mapping[str, int], suppressed: Mapping[str, int]) -> None:
        """Set the per-config in-flight and the suppressed gauges (refreshed with the queue
        gauges, from the database)."""
        self._health = {"in_flight": dict(in_flight), "suppressed": dict(suppressed)}

    def queue(self, by_status: Mapping[Status, int], oldest_due_age: float | None) -> None:
        """Set the queue gauges from one bounded count (refreshed on an interval, not per
        scrape: the count reads the database)."""
        self._queue = {status: min(by_status.get(status, 0), QUEUE_DEPTH_CAP)
                       for status in Status}
        self._oldest_due_age = oldest_due_age or 0.0

    def blocked_keys(self, count: int) -> None:
        """Set how many ordering keys a failure holds now (refreshed with the queue gauges)."""
        self._blocked_keys = count

    def _observe_blocked_keys(self, options: CallbackOptions) -> list[Observation]:
        return [] if self._blocked_keys is None else [Observation(self._blocked_keys)]

    def kafka_lag(self, lags: Mapping[tuple[str, int], int]) -> None:
        """Replace the lag of each (topic, partition) this worker consumes."""
        self._kafka_lag = dict(lags)

    def kafka_stalled(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Replace the (topic, partition)s this worker holds because it cannot decode them."""
        self._kafka_stalled = set(partitions)

    def _observe(self, name: str, label: str):
        def observe(options: CallbackOptions) -> list[Observation]:
            return [Observation(value, {label: key})
                    for key, value in self._health[name].items()]

        return observe

    def _observe_queue_depth(self, options: CallbackOptions) -> list[Observation]:
        return [] if self._queue is None else [Observation(self._queue[Status.PENDING])]

    def _observe_deliveries(self, options: CallbackOptions) -> list[Observation]:
        return [Observation(count, {"status": status})
                for status, count in (self._queue or {}).items()]

    def _observe_oldest_due_age(self, options: CallbackOptions) -> list[Observation]:
        return [] if self._queue is None else [Observation(self._oldest_due_age)]

    def _observe_kafka_lag(self, options: CallbackOptions) -> list[Observation]:
        return [Observation(lag, {"topic": topic, "partition": str(partition)})
                for (topic, partition), lag in self._kafka_lag.items()]

    def _observe_kafka_stalled(self, options: CallbackOptions) -> list[Observation]:
        return [Observation(1, {"topic": topic, "partition": str(partition)})
                for topic, partition in sorted(self._kafka_stalled)]
