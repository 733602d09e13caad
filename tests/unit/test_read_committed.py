"""Aborted transactions found from the markers of a fetch, when the broker lists none.

Record batches are built with kafka-python's own builder, as a producer and a broker write
them; they are read by kafka-python's own partition records, as the consumer reads a fetch.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from kafka import TopicPartition
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from service.ingest import read_committed
from service.ingest.read_committed import (
    AbortedTransaction,
    BrokerSeen,
    CommittedPartitionRecords,
    Decided,
    UndecidedTransactionError,
    decide,
)

A, B = 7, 9  # producer ids of two transactional producers
IDEMPOTENT = 11  # a producer id without transactions
ABORT, COMMIT = 0, 1  # the control record's type
TP = TopicPartition("events", 0)


class _MarkerBuilder(DefaultRecordBatchBuilder):
    """kafka-python's batch builder, writing control batches as a broker does."""

    def _get_attributes(self, include_compression_type=True):
        return super()._get_attributes(include_compression_type) | self.CONTROL_MASK


class Log:
    """The batches of one partition, offsets from `start`; each data record's value is its
    offset."""

    def __init__(self, start: int = 0) -> None:
        self.offset = start
        self.data = bytearray()

    def plain(self, records: int = 1) -> Log:
        return self._append(DefaultRecordBatchBuilder, -1, False, records)

    def idempotent(self, records: int = 1) -> Log:
        return self._append(DefaultRecordBatchBuilder, IDEMPOTENT, False, records)

    def sent(self, producer: int, records: int = 1) -> Log:
        return self._append(DefaultRecordBatchBuilder, producer, True, records)

    def commit(self, producer: int) -> Log:
        return self._append(_MarkerBuilder, producer, True, 1, marker=COMMIT)

    def abort(self, producer: int) -> Log:
        return self._append(_MarkerBuilder, producer, True, 1, marker=ABORT)

    def batches(self) -> list:
        return list(iter(MemoryRecords(bytes(self.data)).next_batch, None))

    def _append(self, builder_class, producer: int, transactional: bool, records: int,
                marker: int | None = None) -> Log:
        builder = builder_class(magic=2, compression_type=0, is_transactional=transactional,
                                producer_id=producer, producer_epoch=0 if producer >= 0 else -1,
                                base_sequence=0 if producer >= 0 else -1, batch_size=1 << 20)
        for delta in range(records):
            if marker is None:
                key, value = None, str(self.offset + delta).encode()
            else:  # version 0, type; then version 0, coordinator epoch
                key, value = struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 0)
            builder.append(delta, timestamp=1_700_000_000_000, key=key, value=value, headers=[])
        batch = builder.build()
        struct.pack_into(">q", batch, 0, self.offset)  # the broker sets the base offset
        self.data += batch
        self.offset += records
        return self


def client_records(*, omits: bool) -> type[CommittedPartitionRecords]:
    """The partition records of one client whose broker was (or not yet) seen to omit the
    aborted transactions."""
    records = type("Records", (CommittedPartitionRecords,), {"broker": BrokerSeen()})
    records.broker.omits_aborted = omits
    return records


def read(log: Log, *, fetch_offset: int = 0, aborted: list | None = None,
         isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
         records_class: type | None = None) -> tuple[list[int], int]:
    """Read `log` as one fetch answer of a client whose broker omits the aborted
    transactions (unless `records_class` says otherwise); return the offsets of the records
    the consumer gets and the offset the next fetch starts from."""
    records_class = records_class or client_records(omits=True)
    records = records_class(fetch_offset, TP, MemoryRecords(bytes(log.data)),
                            isolation_level=isolation, aborted_transactions=aborted)
    taken = records.take()
    assert [int(record.value) for record in taken] == [record.offset for record in taken]
    return [record.offset for record in taken], records.next_fetch_offset


def aborted(producer: int, first_offset: int) -> AbortedTransaction:
    return AbortedTransaction(producer_id=producer, first_offset=first_offset)


# decide(): what the markers among a fetch's batches tell

def test_batches_without_transactions_decide_nothing():
    assert decide(Log().plain(3).idempotent(2).plain().batches()) == Decided([], None)
    assert decide([]) == Decided([], None)


def test_a_committed_transaction_is_not_aborted():
    assert decide(Log().sent(A, 5).commit(A).batches()) == Decided([], None)


def test_an_aborted_transaction_starts_at_its_first_batch():
    log = Log(start=40).plain().sent(A, 3).sent(A, 2).abort(A).plain()
    assert decide(log.batches()) == Decided([aborted(A, 41)], None)


def test_an_abort_then_a_commit_of_one_producer():
    # What the embedded broker answers: aborted record, ABORT, committed record, COMMIT.
    log = Log().sent(A).abort(A).sent(A).commit(A)
    assert decide(log.batches()) == Decided([aborted(A, 0)], None)


def test_each_aborted_transaction_of_a_producer_is_listed():
    log = Log().sent(A, 2).abort(A).sent(A).commit(A).sent(A, 3).abort(A)
    assert decide(log.batches()) == Decided([aborted(A, 0), aborted(A, 5)], None)


def test_interleaved_producers_are_told_apart():
    log = Log().sent(A).sent(B, 2).plain().sent(A).abort(B).sent(B).commit(A).abort(B)
    assert decide(log.batches()) == Decided([aborted(B, 1), aborted(B, 6)], None)


def test_a_transaction_without_its_marker_is_undecided():
    log = Log().plain().sent(A, 2).sent(B).commit(B).sent(B)
    assert decide(log.batches()) == Decided([], 1)
    assert decide(Log().sent(A).abort(A).sent(B).sent(A).batches()) == Decided([aborted(A, 0)], 2)


def test_a_marker_without_records_in_the_fetch_decides_nothing():
    assert decide(Log().abort(A).commit(B).plain().batches()) == Decided([], None)


def test_a_corrupt_marker_is_an_error_not_a_verdict():
    log = Log().sent(A).abort(A)
    log.data[-1] ^= 0xFF  # the marker's last byte: its checksum no longer matches
    with pytest.raises(CorruptRecordError, match="offset 1 failed crc check"):
        decide(log.batches())


def test_batches_of_the_old_message_formats_are_passed_over():
    builder = MemoryRecordsBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(timestamp=None, key=None, value=b"0", headers=[])
    builder.close()
    old = MemoryRecords(bytes(builder.buffer())).next_batch()
    assert decide([old, *Log(start=1).sent(A).abort(A).batches()]) == Decided([aborted(A, 1)],
                                                                              None)


# The consumer's reading of a fetch: kafka-python's skipping, fed by decide()

def test_aborted_records_are_skipped_and_committed_ones_returned():
    log = Log().sent(A, 2).abort(A).sent(A, 3).commit(A).plain()
    assert read(log) == ([3, 4, 5, 7], 8)


def test_records_stop_before_a_transaction_whose_marker_is_not_in_the_fetch():
    log = Log().plain(2).sent(B).abort(B).sent(A, 2).plain().sent(A)
    assert read(log) == ([0, 1], 4)
    assert read(Log(start=4).sent(A, 2).plain().sent(A).abort(A).plain(), fetch_offset=4) == (
        [6, 9], 10)


def test_a_fetch_that_starts_undecided_holds_the_partition():
    with pytest.raises(UndecidedTransactionError, match=r"events:0: .* at offset 3 does not end"):
        read(Log(start=3).sent(A, 2).plain(), fetch_offset=3)
    with pytest.raises(UndecidedTransactionError):  # read from inside the batch
        read(Log(start=3).sent(A, 2).plain(), fetch_offset=4)


def test_only_markers_and_aborted_records_still_move_the_next_fetch_on():
    assert read(Log().sent(A, 2).abort(A).commit(B)) == ([], 4)


def test_aborted_transactions_the_broker_lists_are_used_as_they_are():
    log = Log().sent(A).sent(B).abort(A).abort(B).plain()
    assert read(log) == ([4], 5)
    assert read(log, aborted=[aborted(A, 0)]) == ([1, 4], 5)


def test_read_uncommitted_is_left_alone():
    log = Log().sent(A).abort(A).sent(B)
    assert read(log, isolation=IsolationLevel.READ_UNCOMMITTED) == ([0, 2], 3)


ACTIONS = ("plain", "sent A", "sent B", "commit A", "abort A", "commit B", "abort B")


@pytest.mark.parametrize("length", range(1, 6))
def test_every_short_log_reads_as_read_committed_says(length):
    """Every sequence of up to five batches of two transactional producers and a plain one:
    exactly the committed and plain records, in order, up to the first undecided batch."""
    for actions in itertools.product(ACTIONS, repeat=length):
        log, expected, pending = Log(), [], {A: [], B: []}
        for action in actions:
            verb, _, name = action.partition(" ")
            producer = {"A": A, "B": B}.get(name)
            if verb == "plain":
                expected.append(log.offset)
            elif verb == "sent":
                pending[producer].append(log.offset)
            elif verb == "commit":
                expected += pending[producer]
            if verb in ("commit", "abort"):
                pending[producer] = []
            getattr(log, verb)(*[producer] if producer else [])
        undecided = min((offsets[0] for offsets in pending.values() if offsets), default=None)
        if undecided == 0:
            with pytest.raises(UndecidedTransactionError):
                read(log)
            continue
        end = log.offset if undecided is None else undecided
        assert read(log) == (sorted(o for o in expected if o < end), end), actions


# Which brokers are trusted

def test_a_broker_not_seen_to_omit_aborted_transactions_is_trusted_as_it_is():
    """Apache Kafka lists every aborted transaction, and sends the list empty when none was
    aborted: a transaction bigger than one fetch must flow, not be held."""
    trusting = client_records(omits=False)
    assert read(Log().sent(A, 2).plain(), records_class=trusting) == ([0, 1, 2], 3)
    assert read(Log().sent(A).commit(A).sent(B), records_class=trusting) == ([0, 2], 3)


def test_an_abort_marker_the_broker_did_not_list_shows_it_omits_them_from_then_on():
    records = client_records(omits=False)
    assert read(Log().sent(A).abort(A).sent(B).commit(B), records_class=records) == ([2], 4)
    assert records.broker.omits_aborted
    # Later fetches of that client stop before a transaction they cannot decide.
    assert read(Log(start=4).plain().sent(A).plain(), fetch_offset=4,
                records_class=records) == ([4], 5)


def test_a_listed_abort_shows_nothing_about_the_broker():
    records = client_records(omits=False)
    log = Log().sent(A).abort(A).plain()
    assert read(log, aborted=[aborted(A, 0)], records_class=records) == ([2], 3)
    assert not records.broker.omits_aborted


# The hook into kafka-python

class _Client:
    def __init__(self, servers: list[str]) -> None:
        self._fetcher = Fetcher.__new__(Fetcher)
        self.config = {"bootstrap_servers": servers}


def test_install_replaces_the_partition_records_of_a_consumer_fetcher():
    consumer = _Client(["127.0.0.1:1", "127.0.0.1:2"])
    assert read_committed.install(consumer) is consumer
    installed = consumer._fetcher.PartitionRecords
    assert issubclass(installed, CommittedPartitionRecords)
    assert not installed.broker.omits_aborted  # nothing seen of its cluster yet
    assert Fetcher.PartitionRecords is not installed  # other clients unchanged
    # What a client learns of its cluster, the next client of that cluster knows.
    installed.broker.omits_aborted = True
    rebuilt = read_committed.install(_Client(["127.0.0.1:2", "127.0.0.1:1"]))
    assert rebuilt._fetcher.PartitionRecords.broker.omits_aborted
    other = read_committed.install(_Client(["127.0.0.1:3"]))
    assert not other._fetcher.PartitionRecords.broker.omits_aborted


def test_install_refuses_a_consumer_built_otherwise():
    with pytest.raises(RuntimeError, match="no Fetcher"):
        read_committed.install(object())


def test_a_kafka_python_that_builds_partition_records_otherwise_is_refused(monkeypatch):
    read_committed._require_hook_point()
    monkeypatch.setattr(Fetcher.PartitionRecords, "__init__",
                        lambda self, fetch_offset, tp, records, **options: None)
    with pytest.raises(RuntimeError, match="reads fetched records differently"):
        read_committed._require_hook_point()
