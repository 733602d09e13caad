"""Record finished attempts in batches, and hand back the claims that will not be attempted.

The recorder writes every finished attempt and its state change in one set-based statement,
which also settles the configs' in-flight counts and circuit breakers. A batch the database
refuses is stored in halves until the refused result stands alone; that one is stored
without the text its endpoint sent. A config whose endpoint answers 410 Gone is deactivated
in the transaction that records the answer.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import gevent
import gevent.queue

from db import configs, deliveries
from db.deliveries import AttemptResult, Claimed, Moved
from db.errors import DatabaseError, DatabaseUnavailable, InvalidData, StatementCancelled
from db.health import HealthRules, Transition
from db.pool import ConnectionPool
from db.scope import PLATFORM
from db.vocabulary import Status
from service.dispatch import circuit
from service.dispatch.sender import Response
from service.policy.backoff import pause_after
from service.policy.halves import store_in_halves
from service.runtime.telemetry import Telemetry

log = logging.getLogger("webhooks.dispatcher")

GATHER = 0.010  # seconds a record waits for more results: fewer, larger record statements
RECORD_BATCH = 500  # most attempts written by one record statement
GONE = 410  # Standard Webhooks: the endpoint is gone for good, stop sending
GONE_REASON = "endpoint answered 410 Gone"
CANCELLED_TRIES = 3  # runs of a statement the server keeps cancelling (statement_timeout)
_STOP = object()

ClaimKey = tuple[int, uuid.UUID]  # a delivery id and the token of the claim on it
# A finished send: the claim, the response, and the result to record (None: the send crashed).
Finished = tuple[Claimed, Response | None, AttemptResult | None]
Done = tuple[Claimed, Response, AttemptResult]
# What recording a batch did: the deliveries moved, the circuits changed, and the configs
# deactivated for answering 410 Gone, with the pending deliveries each cancelled.
Stored = tuple[list[Moved], list[Transition], dict[str, int]]


class Recorder:
    """The recording side of one worker's delivery pipeline."""

    def __init__(self, pool: ConnectionPool, rules: HealthRules, *, telemetry: Telemetry,
                 free: Callable[[Claimed], None]) -> None:
        self.pool = pool
        self.rules = rules
        self.telemetry = telemetry
        self._free = free  # called once for each claim the recorder is done with
        self._results: gevent.queue.Queue = gevent.queue.Queue()

    def put(self, finished: Finished) -> None:
        """Queue a finished send for the record loop."""
        self._results.put(finished)

    def close(self) -> None:
        """Make the record loop return once it has recorded what is queued."""
        self._results.put(_STOP)

    def run(self) -> None:
        """Record queued results in batches of up to RECORD_BATCH until close()."""
        while True:
            first = self._results.get()
            if first is _STOP:
                return
            gevent.sleep(GATHER)  # let the sends finishing meanwhile join this batch
            batch = [first]
            while len(batch) < RECORD_BATCH and not self._results.empty():
                item = self._results.get_nowait()
                if item is _STOP:
                    self._results.put(_STOP)
                    break
                batch.append(item)
            try:
                self.record(batch)
            except Exception:
                log.exception("recording attempts failed; their claims will be recovered",
                              extra={"deliveries": len(batch)})
                for claimed, _, _ in batch:
                    self._free(claimed)

    def record(self, batch: list[Finished], *, deadline: float | None = None) -> None:
        """Record `batch`, handing back the claims whose send crashed."""
        crashed = [claimed for claimed, _, result in batch if result is None]
        done = [(claimed, response, result) for claimed, response, result in batch if result]
        if crashed:
            self.release(crashed, reason="attempt crashed")
        if not done:
            return
        moved, transitions, deactivated = self._store(done, deadline=deadline)
        circuit.report(transitions, self.telemetry)
        states = {(m.id, m.token): m for m in moved}
        self.telemetry.attempts((r.outcome, r.status_code, r.duration) for _, r, _ in done)
        for status, count in Counter(m.status for m in moved).items():
            self.telemetry.transition(Status.DELIVERING, status, count)
        for claimed, _, result in done:
            self._free(claimed)
            state = states.get(claim_key(claimed))
            if state is None:
                log.warning("claim was lost before the result arrived; attempt kept, state "
                            "unchanged", extra=_fields(claimed, result))
                continue
            # Successes are the bulk and their history is in the database: debug level.
            level = logging.DEBUG if state.status == Status.SUCCEEDED else logging.INFO
            if log.isEnabledFor(level):
                log.log(level, "attempt", extra={**_fields(claimed, result),
                                                 "status": state.status,
                                                 "next_attempt_at": state.next_attempt_at})
        for config_id, cancelled in deactivated.items():
            self.telemetry.config_deactivated("gone")
            self.telemetry.transition(Status.PENDING, Status.CANCELLED, cancelled)
            log.warning("config deactivated", extra={
                "config_id": config_id, "reason": GONE_REASON, "cancelled_deliveries": cancelled})

    def release(self, claims: list[Claimed], *, reason: str,
                deadline: float | None = None) -> None:
        """Hand `claims` back unattempted, saying why."""
        try:
            handed = self._with_retries(
                self._release_claims, [claim_key(c) for c in claims], attempts=5,
                deadline=deadline)
        except DatabaseError:
            log.error("could not hand claims back; they will be recovered when stale",
                      extra={"deliveries": len(claims), "reason": reason})
            handed = deliveries.HandedBack([], [])
        for claim in claims:
            self._free(claim)
        for state in handed.moved:
            self.telemetry.transition(Status.DELIVERING, state.status)
        circuit.report(handed.transitions, self.telemetry)
        if handed.moved:
            log.info("claims handed back", extra={"deliveries": len(handed.moved),
                                                  "reason": reason})

    def _recorder_of(self, gone: set[str]) -> Callable[[ConnectionPool, list[Done]], Stored]:
        """Return what records one part of a batch whose 410 answers came from `gone`."""
        def record_and_settle(pool: ConnectionPool, done: list[Done]) -> Stored:
            results = [result for _, _, result in done]
            deactivate = {claimed.config_id for claimed, _, result in done
                          if claimed.config_id in gone and result.status_code == GONE}
            if not deactivate:
                return (*deliveries.record_and_settle(pool, results, self.rules, gone=gone), {})
            try:
                touched = {claimed.config_id for claimed, _, _ in done}
                return deliveries.record_and_deactivate(
                    pool, results, self.rules, configs_touched=touched, deactivate=deactivate,
                    gone=gone, reason=GONE_REASON)
            except StatementCancelled as error:
                # A large backlog to cancel can outlast statement_timeout every time: the
                # answers are recorded first, and each deactivation in its own transaction.
                log.warning("recording with the deactivation it causes was cancelled; "
                            "recording first, deactivating after", extra={"error": str(error)})
                moved, transitions = deliveries.record_and_settle(pool, results, self.rules,
                                                                  gone=gone)
                return moved, transitions, self._deactivate_apart(deactivate)
        return record_and_settle

    def _deactivate_apart(self, config_ids: set[str]) -> dict[str, int]:
        """Deactivate each config in its own transaction; return those changed now with the
        pending deliveries each cancelled (a failure is logged: the next 410 tries again)."""
        deactivated = {}
        for config_id in sorted(config_ids):
            try:
                change = configs.deactivate(self.pool, PLATFORM, config_id, reason=GONE_REASON)
            except Exception:
                log.exception("could not deactivate a config whose endpoint is gone; the next "
                              "410 tries again", extra={"config_id": config_id})
                continue
            if change.changed:
                deactivated[config_id] = change.cancelled
        return deactivated

    def _release_claims(self, pool: ConnectionPool, claims: list[ClaimKey]):
        return deliveries.release(pool, claims, self.rules)

    def _store(self, done: list[Done], *, deadline: float | None = None) -> Stored:
        """Record `done` in one statement, or in halves until each result the database refuses
        stands alone; such a result is recorded without the text the endpoint sent. A batch
        whose statement the server keeps cancelling (statement_timeout) is recorded in halves
        too; a single result that still cannot be recorded is left to the stale-claim sweep.
        Return the moves, circuit transitions and deactivations the results caused."""
        gone = {claimed.config_id for claimed, _, result in done
                if result.status_code == GONE and claimed.config_active}
        record = functools.partial(self._with_retries, self._recorder_of(gone),
                                   attempts=5 if deadline else None, deadline=deadline)

        def alone(finished: Done, error: Exception) -> Stored:
            claimed, response, result = finished
            if isinstance(error, StatementCancelled):
                log.error("recording an attempt was cancelled every time; its claim will be "
                          "recovered", extra={**_fields(claimed, result), "error": str(error)})
                return [], [], {}
            log.error("attempt could not be stored as is; recording it without the "
                      "endpoint's text", extra={**_fields(claimed, result), "error": str(error)})
            try:
                return record([(claimed, response, _without_endpoint_text(result))])
            except InvalidData:
                log.exception("attempt could not be stored; its claim will be recovered",
                              extra={"delivery_id": claimed.id})
                return [], [], {}

        parts = store_in_halves(done, record, refused=(StatementCancelled, InvalidData),
                                alone=alone)
        return ([moved for part, _, _ in parts for moved in part],
                [transition for _, part, _ in parts for transition in part],
                {id: n for _, _, part in parts for id, n in part.items()})

    def _with_retries(self, operation, argument, *, attempts: int | None = None,
                      deadline: float | None = None):
        """Call `operation` until it reaches the database, at most `attempts` times, and
        never starting a retry that would begin after the monotonic `deadline`."""
        failures = cancelled = 0
        while True:
            try:
                return operation(self.pool, argument)
            except DatabaseUnavailable as error:
                failures += 1
                cancelled += isinstance(error, StatementCancelled)
                pause = pause_after(failures)
                if attempts is not None and failures >= attempts:
                    raise
                if cancelled >= CANCELLED_TRIES:
                    raise
                if deadline is not None and time.monotonic() + pause >= deadline:
                    raise
                log.warning("database call failed; retrying",
                            extra={"error": str(error), "operation": operation.__name__})
                gevent.sleep(pause)


def claim_key(claimed: Claimed) -> ClaimKey:
    """Return the key of one claim: its delivery id and token."""
    return claimed.id, claimed.token


def _without_endpoint_text(result: AttemptResult) -> AttemptResult:
    """Return `result` with every text an endpoint could have shaped replaced by our own."""
    note = "the endpoint's response could not be stored"
    code = result.status_code
    return replace(result, response_excerpt=None, error=note,
                   last_error=None if result.next_status == Status.SUCCEEDED
                   else f"HTTP {code}: {note}" if code else note)


def _fields(claimed: Claimed, result: AttemptResult) -> dict:
    return {
        "delivery_id": claimed.id,
        "webhook_id": claimed.webhook_id,
        "event_id": claimed.event_id,
        "config_id": claimed.config_id,
        "attempt": result.attempt_number,
        "replay_generation": result.replay_generation,
        "outcome": result.outcome,
        "status_code": result.status_code,
        "duration_ms": result.duration_ms,
        "error": result.error,
    }
