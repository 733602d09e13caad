"""The stalled-partitions gauge: one series per held Kafka partition, gone once released."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from service.runtime.telemetry import Telemetry


def _held(telemetry: Telemetry) -> dict[tuple[str, str], float]:
    return {(sample.labels["topic"], sample.labels["partition"]): sample.value
            for family in text_string_to_metric_families(telemetry.prometheus_text().decode())
            for sample in family.samples if sample.name == "webhooks_kafka_stalled_partitions"}


def test_each_held_partition_is_a_series_of_one_until_released():
    telemetry = Telemetry()
    assert _held(telemetry) == {}

    telemetry.gauges.kafka_stalled([("orders", 0), ("orders", 3), ("billing", 0)])
    assert _held(telemetry) == {("orders", "0"): 1, ("orders", "3"): 1, ("billing", "0"): 1}

    telemetry.gauges.kafka_stalled([("orders", 3)])
    assert _held(telemetry) == {("orders", "3"): 1}

    telemetry.gauges.kafka_stalled([])
    assert _held(telemetry) == {}
