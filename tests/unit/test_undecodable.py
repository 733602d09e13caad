"""Which errors of a poll may come from a batch's bytes (and send the consumer looking)."""

from __future__ import annotations

import pytest
import zstandard
from kafka.errors import (
    CommitFailedError,
    CorruptRecordError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NodeNotReadyError,
    RebalanceInProgressError,
    UnsupportedCodecError,
)

from service.ingest.undecodable import described, is_decoding_error


@pytest.mark.parametrize("error", [
    UnsupportedCodecError("Libraries for snappy compression codec not found"),
    UnsupportedCodecError("Unrecognized compression type: 5"),
    CorruptRecordError("Record batch for partition 0 at offset 2 failed crc check"),
    zstandard.ZstdError("corrupted frame"),
    RuntimeError("lz4 frame is corrupted"),
    ValueError("unpack requires a buffer"),
])
def test_errors_from_the_bytes_of_a_batch(error):
    assert is_decoding_error(error)


@pytest.mark.parametrize("error", [
    KafkaError("something else"),
    KafkaConnectionError("broker gone"),
    KafkaTimeoutError("no answer"),
    NodeNotReadyError(),
    RebalanceInProgressError(),
    CommitFailedError(),
])
def test_errors_of_the_broker_or_the_group(error):
    assert not is_decoding_error(error)


@pytest.mark.parametrize("error, text", [
    (UnsupportedCodecError("Libraries for snappy compression codec not found"),
     "UnsupportedCodecError: Libraries for snappy compression codec not found"),
    (CorruptRecordError("Record batch for partition 0 at offset 2 failed crc check"),
     "CorruptRecordError: Record batch for partition 0 at offset 2 failed crc check"),
    (zstandard.ZstdError("corrupted frame"), "ZstdError: corrupted frame"),
    (RuntimeError(""), "RuntimeError: "),
])
def test_reasons_name_the_error_once(error, text):
    assert described(error) == text
