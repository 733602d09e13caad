"""Read committed transactions only, even from a broker that does not list the aborted ones.

A read_committed Kafka client drops the records of aborted transactions by the list of
aborted transactions the broker sends with each fetch. Some Kafka-protocol brokers (tansu,
the embedded broker of `webhooks dev --kafka` and the tests) write the transaction markers
into the log and hold back open transactions, but always send that list empty: the client
would take every aborted record for a committed one.

A broker shows that it omits the list when a fetch holds an ABORT marker (of a transaction
that began in the fetched range) and lists no aborted transaction: Apache Kafka would have
listed it. From then on, for that client (`install`), a read_committed fetch that lists none
has its list derived from the markers in the fetched batches (`decide`): for each producer,
its transactional batches before an ABORT marker are an aborted transaction, and
kafka-python's own skipping drops them. A transactional batch whose marker is not in the
fetch is not returned: the partition's records stop before it, and the next fetch, starting
there, sees its marker. When even the first batch of a fetch is undecided (a transaction
larger than what the broker returns at once) the poll raises `UndecidedTransactionError`,
and the consumer holds the partition as it holds a batch it cannot decode. A broker that
lists aborted transactions (Apache Kafka, which also sends the list empty when none were
aborted) is trusted as it is: nothing is held back, whatever the size of a transaction.

The hook is one class kafka-python keeps internal, `Fetcher.PartitionRecords`, replaced on
the fetcher of each client built here (`install`); importing this module fails at once if
kafka-python no longer builds and reads partition records as expected.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import kafka
from kafka import KafkaConsumer
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import FetchResponse, IsolationLevel

if TYPE_CHECKING:
    from kafka.record.abc import ABCRecordBatch

AbortedTransaction = FetchResponse.FetchableTopicResponse.PartitionData.AbortedTransaction


class UndecidedTransactionError(Exception):
    """The first batch of a fetch belongs to a transaction whose marker the fetch lacks."""


class Decided(NamedTuple):
    """What the transaction markers among a fetch's batches tell."""

    aborted: list[AbortedTransaction]  # (producer id, first offset in the fetch) of each
    undecided: int | None  # offset of the first transactional batch without its marker


def decide(batches: Iterable[ABCRecordBatch]) -> Decided:
    """Return the aborted transactions the markers among `batches` show, and where the first
    transactional batch whose marker is not among them starts."""
    aborted: list[AbortedTransaction] = []
    open_since: dict[int, int] = {}  # producer id: first offset of its unmarked batches
    for batch in batches:
        if batch.magic < 2:
            continue  # no transactions before message format 2
        if batch.is_control_batch:
            first = open_since.pop(batch.producer_id, None)
            if first is not None and _is_abort_marker(batch):
                aborted.append(AbortedTransaction(producer_id=batch.producer_id,
                                                  first_offset=first))
        elif batch.is_transactional:
            open_since.setdefault(batch.producer_id, batch.base_offset)
    return Decided(aborted, min(open_since.values(), default=None))


class BrokerSeen:
    """What this process has seen of one Kafka cluster: whether it omits the aborted
    transactions."""

    def __init__(self) -> None:
        self.omits_aborted = False


_CLUSTERS: dict[tuple[str, ...], BrokerSeen] = {}  # by bootstrap servers, for this process


def install(client: KafkaConsumer) -> KafkaConsumer:
    """Make `client` derive the aborted transactions of fetches that list none, once its
    cluster has shown that it omits them (remembered for every client of this process that
    uses the same bootstrap servers: the consumer rebuilds its client after errors); return
    it."""
    fetcher = getattr(client, "_fetcher", None)
    if not isinstance(fetcher, Fetcher):
        raise RuntimeError(f"kafka-python {kafka.__version__}: the consumer has no Fetcher "
                           "where service/ingest/read_committed.py expects it")
    servers = client.config.get("bootstrap_servers") or ()
    cluster = tuple(sorted([servers] if isinstance(servers, str) else servers))
    fetcher.PartitionRecords = type("CommittedPartitionRecords", (CommittedPartitionRecords,),
                                    {"broker": _CLUSTERS.setdefault(cluster, BrokerSeen())})
    return client


def _is_abort_marker(batch: ABCRecordBatch) -> bool:
    if not batch.validate_crc():  # its bytes decide what is stored: never trust them unchecked
        raise CorruptRecordError(f"Control batch at offset {batch.base_offset} failed crc check")
    marker = next(iter(batch), None)
    return marker is not None and marker.abort


class CommittedPartitionRecords(Fetcher.PartitionRecords):
    """kafka-python's records of one partition fetch, aborted transactions found by `decide`
    when a broker known to omit them lists none (`install` gives each client its own
    `broker`)."""

    broker = BrokerSeen()

    def __init__(self, fetch_offset: int, tp: Any, records: Any, *args: Any,
                 isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                 aborted_transactions: list | None = None, **kwargs: Any) -> None:
        if isolation_level == IsolationLevel.READ_COMMITTED and not aborted_transactions:
            ahead = copy.copy(records)  # read ahead on a copy; kafka-python reads `records`
            decided = decide(iter(ahead.next_batch, None))
            if decided.aborted:  # aborted here, yet none listed: this broker omits them
                self.broker.omits_aborted = True
            if self.broker.omits_aborted:
                aborted_transactions, undecided = decided
            else:
                undecided = None
            if undecided is not None:
                if undecided <= fetch_offset:
                    raise UndecidedTransactionError(
                        f"partition {tp.topic}:{tp.partition}: the transaction at offset "
                        f"{undecided} does not end within one fetch, so it cannot be told "
                        "committed from aborted (the broker lists no aborted transactions)")
                records = _BatchesBefore(records, undecided)
        super().__init__(fetch_offset, tp, records, *args, isolation_level=isolation_level,
                         aborted_transactions=aborted_transactions, **kwargs)


class _BatchesBefore:
    """The batches of `records` that start before `offset`."""

    def __init__(self, records: Any, offset: int) -> None:
        self._records = records
        self._offset = offset

    def next_batch(self) -> ABCRecordBatch | None:
        batch = self._records.next_batch()
        return batch if batch is not None and batch.base_offset < self._offset else None


def _require_hook_point() -> None:
    """Fail unless kafka-python builds partition records through `self.PartitionRecords`
    with the fetch's aborted transactions, and reads them by `next_batch()` only."""
    parameters = inspect.signature(Fetcher.PartitionRecords.__init__).parameters
    expected = (
        {"PartitionRecords", "aborted_transactions"}
        <= set(Fetcher._parse_fetched_data.__code__.co_names)
        and list(parameters)[:4] == ["self", "fetch_offset", "tp", "records"]
        and {"isolation_level", "aborted_transactions"} <= parameters.keys()
        and "next_batch" in Fetcher.PartitionRecords._unpack_records.__code__.co_names
    )
    if not expected:
        raise RuntimeError(
            f"kafka-python {kafka.__version__} reads fetched records differently from 3.0: "
            "service/ingest/read_committed.py must be updated before aborted transactions "
            "can be told from committed ones")


_require_hook_point()
