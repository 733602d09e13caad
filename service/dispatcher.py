"""Claim due deliveries, POST them concurrently, and record the outcomes in batches.

Three kinds of greenlet form a pipeline: the claimer keeps a queue of claimed deliveries
ready (up to WEBHOOKS_DISPATCH_CONCURRENCY of them), refilling it with one short claim
transaction at a time while the sends go on, so claim latency never idles the HTTP side;
up to WEBHOOKS_DISPATCH_CONCURRENCY senders sign and POST outside any transaction, each
taking the next ready delivery as it finishes; the recorder writes every finished attempt
and its state change in one set-based statement. Claimed-but-unrecorded deliveries are
bounded (three times the concurrency). No row lock is held across HTTP, and a database
outage stalls the pipeline without losing anything: results wait in memory, and claims
that never get recorded go stale and are recovered.
"""

from __future__ import annotations

import collections
import logging
import random
import time
import uuid
from collections import Counter
from datetime import timedelta

import gevent
import gevent.event
import gevent.pool
import gevent.queue

from db import deliveries
from db.deliveries import AttemptResult, Claimed
from db.errors import DatabaseError, DatabaseUnavailable
from db.pool import ConnectionPool
from service import outgoing
from service.backoff import RetryPolicy
from service.sender import Response, Sender
from service.telemetry import Telemetry
from service.verdict import judge

log = logging.getLogger("webhooks.dispatcher")

RECORD_BATCH = 500  # most attempts written by one record statement
DATABASE_RETRY_CAP = 5.0  # seconds, longest pause between retries of a failed database call
FLUSH_RESERVE = 3.0  # seconds of the shutdown grace kept to record results and hand back claims
_STOP = object()

ClaimKey = tuple[int, uuid.UUID]  # a delivery id and the token of the claim on it


class Dispatcher:
    """The delivery pipeline of one worker process."""

    def __init__(self, pool: ConnectionPool, settings, *, owner: str, telemetry: Telemetry,
                 sender: Sender | None = None, rng: random.Random | None = None) -> None:
        self.pool = pool
        self.settings = settings
        self.owner = owner
        self.telemetry = telemetry
        self.policy = RetryPolicy.from_settings(settings)
        self.sender = sender or Sender(
            timeout=settings.http_timeout, concurrency=settings.dispatch_concurrency,
            allow_private=settings.allow_private_endpoints,
        )
        self.rng = rng
        self.capacity = settings.dispatch_concurrency
        self.backlog_limit = 3 * self.capacity  # claimed but not yet recorded
        # Keyed by claim, not delivery: a worker may still hold a late result of a claim that
        # went stale while it holds a new claim of the same delivery.
        self.inflight: dict[ClaimKey, Claimed] = {}
        self._ready: collections.deque[Claimed] = collections.deque()
        self._sending = 0
        self._started_at: dict[ClaimKey, float] = {}
        self._sends = gevent.pool.Group()
        self._results: gevent.queue.Queue = gevent.queue.Queue()
        self._wakeup = gevent.event.Event()
        self._slot_freed = gevent.event.Event()
        self._claiming = True
        self._greenlets: list[gevent.Greenlet] = []

    def start(self) -> None:
        """Start the claimer and the recorder."""
        self._greenlets = [gevent.spawn(self._claim_loop), gevent.spawn(self._record_loop)]

    def wake(self) -> None:
        """Claim now: new deliveries may be due (called on NOTIFY)."""
        self._wakeup.set()

    def stop_claiming(self) -> None:
        """Take no new work; what is in flight carries on, what is only claimed goes back."""
        self._claiming = False
        self._ready.clear()  # still in `inflight`: handed back when the dispatcher stops
        self._wakeup.set()
        self._slot_freed.set()

    def stop(self, timeout: float) -> None:
        """Stop claiming, let in-flight attempts finish, record them and hand back the rest.

        Everything happens within `timeout` seconds; the last FLUSH_RESERVE of them are kept
        for recording results and handing back unfinished claims.
        """
        deadline = time.monotonic() + timeout
        self.stop_claiming()
        claimer, recorder = self._greenlets or (None, None)
        if claimer:
            claimer.join(timeout=1)
            claimer.kill()
        self._sends.join(timeout=max(0.0, deadline - time.monotonic() - FLUSH_RESERVE))
        self._sends.kill(block=True, timeout=1)
        if recorder:
            self._results.put(_STOP)
            recorder.join(timeout=max(1.0, deadline - time.monotonic()))
            recorder.kill()
        unfinished = list(self.inflight.values())
        if unfinished:
            self._release(unfinished, reason="shutdown", deadline=deadline)
        self.sender.close()

    # -- claiming ---------------------------------------------------------------------------

    def _claim_loop(self) -> None:
        batch = self.settings.retry_batch_size
        low_water = max(1, min(batch, self.capacity) // 4)
        failures = 0
        while self._claiming:
            free = self._free_slots()
            if free < low_water:
                self._slot_freed.clear()
                if self._free_slots() < low_water:
                    self._slot_freed.wait()
                continue
            limit = min(free, batch)
            try:
                claimed = deliveries.claim_due(self.pool, owner=self.owner, limit=limit)
                failures = 0
            except DatabaseError as error:
                failures += 1
                log.warning("claim failed; retrying", extra={"error": str(error)})
                gevent.sleep(_pause_after(failures))
                continue
            self._launch(claimed)
            if len(claimed) < limit:
                self._idle()

    def _free_slots(self) -> int:
        """Return how many deliveries to claim: room in the ready queue and the backlog."""
        queued = self._sending + len(self._ready)
        return min(2 * self.capacity - queued, self.backlog_limit - len(self.inflight))

    def _idle(self) -> None:
        """Wait for a NOTIFY, the next due time, or the poll period, whichever comes first."""
        wait = self.settings.retry_period
        try:
            until_due = deliveries.seconds_until_next_due(self.pool)
        except DatabaseError:
            until_due = None
        if until_due is not None:
            wait = min(wait, until_due)
        if wait > 0:
            self._wakeup.wait(wait)
        self._wakeup.clear()

    def _launch(self, claimed: list[Claimed]) -> None:
        if not claimed:
            return
        self.telemetry.transition("pending", "delivering", len(claimed))
        now = time.monotonic()
        inactive = [c for c in claimed if not c.config_active]
        for item in claimed:
            self.inflight[_key(item)] = item
            self._started_at[_key(item)] = now
            if item.config_active:
                self._ready.append(item)
        self._fill()
        if inactive:
            self._release(inactive, reason="config inactive")

    def _fill(self) -> None:
        """Start ready deliveries while send slots are free (and work is still taken)."""
        while self._claiming and self._ready and self._sending < self.capacity:
            self._sending += 1
            self._sends.spawn(self._attempt, self._ready.popleft())

    # -- sending ----------------------------------------------------------------------------

    def _attempt(self, claimed: Claimed) -> None:
        try:
            self._results.put(self._send(claimed))
        finally:
            self._sending -= 1
            self._slot_freed.set()
            self._fill()

    def _send(self, claimed: Claimed) -> tuple[Claimed, Response | None, AttemptResult | None]:
        try:
            body = outgoing.body(claimed)
            headers = outgoing.headers(claimed, body)
            with self.telemetry.attempt_span(_span_attributes(claimed)) as (span, context):
                headers.update(context)
                response = self.sender.post(claimed.endpoint, body, headers)
                span.set_attribute("http.response.status_code", response.status_code)
            elapsed = time.monotonic() - self._started_at[_key(claimed)]
            now = claimed.claimed_at + timedelta(seconds=elapsed)
            result = judge(claimed, response, self.policy, now=now, rng=self.rng)
        except Exception:
            log.exception("attempt crashed; handing the delivery back",
                          extra={"delivery_id": claimed.id})
            return claimed, None, None
        return claimed, response, result

    # -- recording --------------------------------------------------------------------------

    def _record_loop(self) -> None:
        while True:
            first = self._results.get()
            if first is _STOP:
                return
            batch = [first]
            while len(batch) < RECORD_BATCH and not self._results.empty():
                item = self._results.get_nowait()
                if item is _STOP:
                    self._results.put(_STOP)
                    break
                batch.append(item)
            try:
                self._record(batch)
            except Exception:
                log.exception("recording attempts failed; their claims will be recovered",
                              extra={"deliveries": len(batch)})
                for claimed, _, _ in batch:
                    self._free(claimed)

    def _record(self, batch: list[tuple[Claimed, Response | None, AttemptResult | None]]) -> None:
        crashed = [claimed for claimed, _, result in batch if result is None]
        done = [(claimed, response, result) for claimed, response, result in batch if result]
        if crashed:
            self._release(crashed, reason="attempt crashed")
        if not done:
            return
        moved = self._with_retries(deliveries.record, [result for _, _, result in done])
        states = {(m.id, m.token): m for m in moved}
        self.telemetry.attempts((r.outcome, r.status_code, r.duration) for _, r, _ in done)
        for status, count in Counter(m.status for m in moved).items():
            self.telemetry.transition("delivering", status, count)
        for claimed, _, result in done:
            self._free(claimed)
            state = states.get(_key(claimed))
            if state is None:
                log.warning("claim was lost before the result arrived; attempt kept, state "
                            "unchanged", extra=_fields(claimed, result))
                continue
            # Successes are the bulk and their history is in the database: debug level.
            level = logging.DEBUG if state.status == "succeeded" else logging.INFO
            if log.isEnabledFor(level):
                log.log(level, "attempt", extra={**_fields(claimed, result),
                                                 "status": state.status,
                                                 "next_attempt_at": state.next_attempt_at})

    def _release(self, claims: list[Claimed], *, reason: str,
                 deadline: float | None = None) -> None:
        try:
            moved = self._with_retries(
                deliveries.release, [(c.id, c.token) for c in claims], attempts=5,
                deadline=deadline)
        except DatabaseError:
            log.error("could not hand claims back; they will be recovered when stale",
                      extra={"deliveries": len(claims), "reason": reason})
            moved = []
        for claim in claims:
            self._free(claim)
        for state in moved:
            self.telemetry.transition("delivering", state.status)
        if moved:
            log.info("claims handed back", extra={"deliveries": len(moved), "reason": reason})

    def _free(self, claimed: Claimed) -> None:
        self.inflight.pop(_key(claimed), None)
        self._started_at.pop(_key(claimed), None)
        self._slot_freed.set()

    def _with_retries(self, operation, argument, *, attempts: int | None = None,
                      deadline: float | None = None):
        """Call `operation` until it reaches the database, at most `attempts` times, and
        never starting a retry that would begin after the monotonic `deadline`."""
        failures = 0
        while True:
            try:
                return operation(self.pool, argument)
            except DatabaseUnavailable as error:
                failures += 1
                pause = _pause_after(failures)
                if attempts is not None and failures >= attempts:
                    raise
                if deadline is not None and time.monotonic() + pause >= deadline:
                    raise
                log.warning("database call failed; retrying",
                            extra={"error": str(error), "operation": operation.__name__})
                gevent.sleep(pause)


def _pause_after(failures: int) -> float:
    """Seconds to wait before retrying a database call that failed `failures` times."""
    return min(DATABASE_RETRY_CAP, 0.1 * 2 ** min(failures, 10))


def _key(claimed: Claimed) -> ClaimKey:
    return claimed.id, claimed.token


def _span_attributes(claimed: Claimed) -> dict[str, str | int]:
    return {
        "webhooks.delivery_id": claimed.id,
        "webhooks.event_id": claimed.event_id,
        "webhooks.config_id": claimed.config_id,
        "webhooks.attempt": claimed.attempt_count + 1,
    }


def _fields(claimed: Claimed, result: AttemptResult) -> dict:
    return {
        "delivery_id": claimed.id,
        "event_id": claimed.event_id,
        "config_id": claimed.config_id,
        "attempt": result.attempt_number,
        "replay_generation": result.replay_generation,
        "outcome": result.outcome,
        "status_code": result.status_code,
        "duration_ms": result.duration_ms,
        "error": result.error,
    }
