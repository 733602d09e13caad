"""A label given as a word of the vocabulary (an enum member) and as the text read from a row
is one series: exporting both would show two series with the same labels, which Prometheus
refuses."""

from db.vocabulary import CircuitState, Status
from service.runtime.telemetry import Telemetry


def _series(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_a_word_and_its_text_count_in_one_series():
    telemetry = Telemetry()
    telemetry.transition(Status.DELIVERING, Status.PENDING)
    telemetry.transition(Status.DELIVERING, "pending", 2)  # as recovery reads it from rows
    telemetry.circuit_transition("closed", "open")  # as a settled transition's row says it
    telemetry.circuit_transition(CircuitState.CLOSED, CircuitState.OPEN)
    text = telemetry.prometheus_text().decode()
    assert _series(text, 'webhooks_delivery_transitions_total{from="delivering",to="pending"}') \
        == ['webhooks_delivery_transitions_total{from="delivering",to="pending"} 3.0']
    assert _series(text, 'webhooks_circuit_transitions_total{from="closed",to="open"}') == [
        'webhooks_circuit_transitions_total{from="closed",to="open"} 2.0']
