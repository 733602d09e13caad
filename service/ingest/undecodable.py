"""Find the partitions whose next batch the Kafka client cannot decode.

kafka-python reports an undecodable batch (a codec it has no library for, a corrupt batch;
also a transaction that cannot be decided, service.ingest.read_committed) by raising from
`poll()`, without saying which partition it came from, and the client that raised cannot
be polled again. So the consumer closes it and asks this module: each
partition the group member was reading is read once more from the same position by a
short-lived client outside the group, alone; the partitions whose read fails are the
culprits. Nothing here commits offsets or joins the group.
"""

from __future__ import annotations

import logging
import re
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import CorruptRecordError, KafkaError, UnsupportedCodecError

from service.ingest import read_committed

log = logging.getLogger("webhooks.consumer")

PROBE_TIMEOUT = 10.0  # seconds one partition is read for before it is taken as readable
PROBE_POLL_MS = 500
CLOSE_TIMEOUT_MS = 1_000
MAX_REASON_LENGTH = 500  # characters of the client's error kept as the reason
_ERROR_NUMBER = re.compile(r"^\[Error -?\d+\] ")


def is_decoding_error(error: BaseException) -> bool:
    """Return True when `error`, raised by poll(), may come from a batch's bytes.

    The client's own decoding errors, and anything that is no KafkaError at all (a codec
    library's exception surfaces as is); connection and protocol errors are not.
    """
    return isinstance(error, UnsupportedCodecError | CorruptRecordError) or not isinstance(
        error, KafkaError)


def described(error: BaseException) -> str:
    """Return `ClassName: message` for any error (kafka-python's own texts say the class
    already, after an `[Error N] ` prefix)."""
    text = str(error)
    if isinstance(error, KafkaError):
        text = _ERROR_NUMBER.sub("", text)
    name = type(error).__name__
    return text if text.startswith(name) else f"{name}: {text}"


def find_undecodable(servers: list[str], positions: dict[TopicPartition, int],
                     *, timeout: float = PROBE_TIMEOUT) -> dict[TopicPartition, str]:
    """Return {partition: reason} for each partition whose batch at its position fails."""
    found: dict[TopicPartition, str] = {}
    for partition, offset in sorted(positions.items()):
        reason = _probe(servers, partition, offset, timeout)
        if reason is not None:
            found[partition] = reason
    return found


def _probe(servers: list[str], partition: TopicPartition, offset: int,
           timeout: float) -> str | None:
    try:
        client = KafkaConsumer(bootstrap_servers=servers, group_id=None,
                               enable_auto_commit=False, isolation_level="read_committed",
                               max_poll_records=1, metrics_enabled=False)
    except KafkaError as error:
        log.warning("cannot start a client to find an undecodable batch",
                    extra={"error": repr(error)})
        return None
    try:
        read_committed.install(client)  # read as the consumer does, to fail where it failed
        client.assign([partition])
        client.seek(partition, offset)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if client.poll(timeout_ms=PROBE_POLL_MS, max_records=1):
                    return None
            except Exception as error:
                if not is_decoding_error(error):
                    return None
                return described(error)[:MAX_REASON_LENGTH]
            end = client.highwater(partition)  # known once a fetch answered
            if end is not None and offset >= end:
                return None  # nothing to read there
        return None
    except KafkaError as error:
        log.warning("finding an undecodable batch failed", extra={"error": repr(error)})
        return None
    finally:
        client.close(autocommit=False, timeout_ms=CLOSE_TIMEOUT_MS)
