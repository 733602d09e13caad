from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.runtime.zero_histograms import ZeroHistograms

BUCKETS = (0.1, 1.0)


def _served(sdk: CollectorRegistry, zeros: ZeroHistograms) -> dict:
    served = CollectorRegistry()
    served.register(zeros)
    text = generate_latest(served).decode()
    families = list(text_string_to_metric_families(text))
    assert len({family.name for family in families}) == len(families)  # one family per name
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families for s in family.samples}


def test_an_unobserved_histogram_is_served_at_zero_for_each_expected_value():
    zeros = ZeroHistograms(CollectorRegistry(), BUCKETS)
    zeros.expect("op_seconds", "op", ["a", "b"], "how long")
    found = _served(CollectorRegistry(), zeros)
    for op in ("a", "b"):
        assert found[("op_seconds_count", (("op", op),))] == 0
        assert found[("op_seconds_sum", (("op", op),))] == 0
        for bound in ("0.1", "1.0", "+Inf"):
            assert found[("op_seconds_bucket", (("le", bound), ("op", op)))] == 0


def test_observed_values_keep_their_figures_and_the_others_get_zeros():
    sdk = CollectorRegistry()
    histogram = Histogram("op_seconds", "how long", ["op"], buckets=BUCKETS, registry=sdk)
    histogram.labels(op="a").observe(0.5)
    zeros = ZeroHistograms(sdk, BUCKETS)
    zeros.expect("op_seconds", "op", ["a", "b"], "how long")
    found = _served(sdk, zeros)
    assert found[("op_seconds_count", (("op", "a"),))] == 1
    assert found[("op_seconds_bucket", (("le", "1.0"), ("op", "a")))] == 1
    assert found[("op_seconds_count", (("op", "b"),))] == 0


def test_expecting_more_values_later_adds_to_the_first():
    zeros = ZeroHistograms(CollectorRegistry(), BUCKETS)
    zeros.expect("op_seconds", "op", ["a"], "how long")
    zeros.expect("op_seconds", "op", ["b", "a"], "how long")
    found = _served(CollectorRegistry(), zeros)
    assert {labels for name, labels in found if name == "op_seconds_count"} \
        == {(("op", "a"),), (("op", "b"),)}
