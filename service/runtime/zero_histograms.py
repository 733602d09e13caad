"""Histograms at zero before their first observation, in the Prometheus output.

OpenTelemetry exports a histogram's series only once it has an observation; an alert on its
rate then has nothing to read on a fresh deployment. This collector serves the SDK's metrics
and adds an empty series for each expected label value still missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric


class ZeroHistograms:
    """Serve the SDK's metrics, adding an empty histogram for each expected label value that
    has no observation yet (OpenTelemetry exports a histogram only once it has one)."""

    def __init__(self, sdk_registry: CollectorRegistry, buckets: tuple[float, ...]) -> None:
        self._sdk = sdk_registry
        self._buckets = buckets
        self._expected: dict[str, tuple[str, tuple[str, ...], str]] = {}

    def expect(self, name: str, label: str, values: Iterable[str], description: str) -> None:
        """Serve histogram `name` for each of `values` of `label`, at zero until observed."""
        _, known, _ = self._expected.get(name, (label, (), description))
        self._expected[name] = (label, tuple(dict.fromkeys((*known, *values))), description)

    def collect(self) -> Iterator[Metric]:
        seen: set[str] = set()
        for family in self._sdk.collect():
            seen.add(family.name)
            if family.name in self._expected:
                self._fill(family)
            yield family
        for name in self._expected.keys() - seen:
            family = Metric(name, self._expected[name][2], "histogram")
            self._fill(family)
            yield family

    def _fill(self, family: Metric) -> None:
        label, values, _ = self._expected[family.name]
        present = {sample.labels.get(label) for sample in family.samples}
        for value in values:
            if value in present:
                continue
            for bound in (*self._buckets, float("inf")):
                family.add_sample(f"{family.name}_bucket",
                                  {label: value, "le": _bound(bound)}, 0.0)
            family.add_sample(f"{family.name}_count", {label: value}, 0.0)
            family.add_sample(f"{family.name}_sum", {label: value}, 0.0)


def _bound(value: float) -> str:
    """Return a bucket bound as Prometheus writes it (`0.5`, `1.0`, `+Inf`)."""
    return "+Inf" if value == float("inf") else repr(float(value))
