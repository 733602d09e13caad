"""Claim due deliveries, POST them concurrently, and record the outcomes in batches.

Three kinds of greenlet form a pipeline: the claimer keeps a queue of claimed deliveries
ready (up to WEBHOOKS_DISPATCH_CONCURRENCY of them), refilling it with one short claim
transaction at a time while the sends go on, so claim latency never idles the HTTP side;
up to WEBHOOKS_DISPATCH_CONCURRENCY senders sign and POST outside any transaction, each
taking the next ready delivery as it finishes; the recorder (service.dispatch.recorder)
writes every finished attempt and its state change in one set-based statement.
Claimed-but-unrecorded deliveries are bounded (three times the concurrency). No row lock is
held across HTTP, and a database outage stalls the pipeline without losing anything: results
wait in memory, and claims that never get recorded go stale and are recovered.

Endpoint isolation happens in the database: the claim takes each config's share (within its
in-flight cap, rate and ramp, nothing of a paused or open config but one probe), and recording
settles the configs' in-flight counts and circuit breakers in the same transaction.
"""

from __future__ import annotations

import logging
import math
import random
import time
from datetime import timedelta

import gevent
import gevent.event
import gevent.pool

from db import deliveries
from db.deliveries import Claimed
from db.errors import DatabaseError
from db.pool import ConnectionPool
from db.vocabulary import Status
from service.dispatch import circuit, outgoing
from service.dispatch.recorder import ClaimKey, Finished, Recorder, claim_key
from service.dispatch.send_queue import SendQueue
from service.dispatch.sender import Sender
from service.dispatch.verdict import interrupted, interruption, judge
from service.policy.backoff import RetryPolicy, pause_after
from service.policy.claim_age import HOLD, may_send
from service.policy.pacing import Pacer
from service.runtime.telemetry import Telemetry

log = logging.getLogger("webhooks.dispatcher")

FLUSH_RESERVE = 3.0  # seconds of the shutdown grace kept to record results and hand back claims
ROOM_WAIT = 0.05  # seconds to wait for room after a claim before asking what is due next
CHANGE_MEMORY = 60.0  # seconds a config change is remembered for claims that began before it
# Seconds between two looks at the versions of the configs whose claims wait to be sent: a
# config changed (paused, opened, deactivated, deleted, a new endpoint or secret) sends none of
# what it had waiting after this, with or without the NOTIFY that says so at once.
CHANGE_POLL = 0.5


class Dispatcher:
    """The delivery pipeline of one worker process."""

    def __init__(self, pool: ConnectionPool, settings, *, owner: str, telemetry: Telemetry,
                 sender: Sender | None = None, rng: random.Random | None = None) -> None:
        self.pool = pool
        self.settings = settings
        self.owner = owner
        self.telemetry = telemetry
        self.policy = RetryPolicy.from_settings(settings)
        self.rules = circuit.rules_from(settings)
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
        # Claimed deliveries waiting for a send slot, and the sends under way, by config.
        self._queue: SendQueue[Claimed] = SendQueue(self.capacity, self.rules.cap)
        self._pacer = Pacer()  # spaces the sends of rate-limited configs
        # Sends waiting for their config's rate, out of the queue: a change of their config
        # seen meanwhile (a NOTIFY, or the version poll) hands them back when the wait ends.
        self._pacing: dict[ClaimKey, Claimed] = {}
        self._outdated: set[ClaimKey] = set()
        self._started_at: dict[ClaimKey, float] = {}
        self._posting: dict[ClaimKey, float] = {}  # sends under way, by monotonic start time
        self._sends = gevent.pool.Group()
        self.recorder = Recorder(pool, self.rules, telemetry=telemetry, free=self._free)
        self._wakeup = gevent.event.Event()
        self._slot_freed = gevent.event.Event()
        self._claiming = True
        self._greenlets: list[gevent.Greenlet] = []
        # When each config was last heard to change (monotonic): a claim that began before it
        # may hold deliveries taken before the change; they are handed back, not sent.
        self._changed: dict[str, float] = {}

    def start(self) -> None:
        """Start the claimer, the recorder and the watch on changed configs."""
        self._greenlets = [gevent.spawn(self._claim_loop), gevent.spawn(self.recorder.run),
                           gevent.spawn(self._watch_changes)]

    def wake(self) -> None:
        """Claim now: new deliveries may be due (called on NOTIFY)."""
        self._wakeup.set()

    def withdraw(self, config_ids: frozenset[str]) -> None:
        """Hand back the claimed deliveries of `config_ids` not yet sent: their config was
        paused, its circuit opened, or it was deactivated, deleted, or given a new endpoint or
        secret (called on that NOTIFY). Sends under way finish."""
        now = time.monotonic()
        self._changed = {config_id: at for config_id, at in self._changed.items()
                         if now - at < CHANGE_MEMORY}
        self._changed.update(dict.fromkeys(config_ids, now))
        withdrawn = self._queue.withdraw(config_ids)
        if withdrawn:
            self.recorder.release(withdrawn, reason="config paused, opened or changed")

    def stop_claiming(self) -> None:
        """Take no new work; what is in flight carries on, what is only claimed goes back."""
        self._claiming = False
        self._queue.clear()  # still in `inflight`: handed back when the dispatcher stops
        self._wakeup.set()
        self._slot_freed.set()

    def stop(self, timeout: float) -> None:
        """Stop claiming, let in-flight attempts finish, record them (those cut short as
        `interrupted`) and hand back the rest.

        Everything happens within `timeout` seconds; the last FLUSH_RESERVE of them are kept
        for recording results and handing back unfinished claims.
        """
        deadline = time.monotonic() + timeout
        self.stop_claiming()
        claimer, recorder, watch = self._greenlets or (None, None, None)
        if claimer:
            claimer.join(timeout=1)
            claimer.kill()
        if watch:
            watch.kill()
        self._sends.join(timeout=max(0.0, deadline - time.monotonic() - FLUSH_RESERVE))
        self._sends.kill(block=True, timeout=1)
        if recorder:
            self.recorder.close()
            recorder.join(timeout=max(1.0, deadline - time.monotonic()))
            recorder.kill()
        self._record_interrupted(deadline)
        unfinished = list(self.inflight.values())
        if unfinished:
            self.recorder.release(unfinished, reason="shutdown", deadline=deadline)
        self.sender.close()

    # -- claiming ---------------------------------------------------------------------------

    def _claim_loop(self) -> None:
        batch = self.settings.retry_batch_size
        low_water = max(1, min(batch, self.capacity) // 4)  # fewer free slots: wait for more
        failures = 0
        while self._claiming:
            free = self._free_slots()
            if free < low_water:
                self._slot_freed.clear()
                if self._free_slots() < low_water:
                    gevent.wait([self._slot_freed, self._wakeup], count=1)
                # Woken (something became due) while the ready queue is full: claim a little
                # now, within the backlog's bound, rather than when sends have freed enough
                # room. What became due may be a quiet tenant's, which the claim serves first
                # and the send queue sends next: it need not wait for the busy ones' sends.
                free = min(low_water, self.backlog_limit - len(self.inflight))
                if not (self._wakeup.is_set() and free > 0):
                    continue
                self._wakeup.clear()
            limit = min(free, batch)
            began = time.monotonic()
            try:
                claimed = deliveries.claim_due(self.pool, owner=self.owner, limit=limit,
                                               rules=self.rules, capacity=self.capacity,
                                               hold=HOLD, rooms=self._queue.rooms())
                failures = 0
            except DatabaseError as error:
                failures += 1
                log.warning("claim failed; retrying", extra={"error": str(error)})
                gevent.sleep(pause_after(failures))
                continue
            self._launch(claimed, began)
            # Claim again at once while a config this claim took has room (its sends went on
            # while the claim ran), or when the limit cut the claim short (others may wait).
            # Otherwise every config gave what it had due or room for: wait (`_idle` returns
            # at once when another config has something due now).
            rooms = self._queue.rooms()
            if not claimed or (len(claimed) < limit
                               and all(rooms.get(c.config_id, 1) <= 0 for c in claimed)):
                self._idle(after_claim=bool(claimed))

    def _free_slots(self) -> int:
        """Return how many deliveries to claim: room in the ready queue and the backlog."""
        queued = self._queue.sending + self._queue.waiting
        return min(2 * self.capacity - queued, self.backlog_limit - len(self.inflight))

    def _idle(self, *, after_claim: bool = False) -> None:
        """Wait for a NOTIFY, the next due time, or the poll period, whichever comes first.

        Right after a claim that took something, the sends it started usually give a config
        room again within milliseconds: wait for that first, and only then ask the database
        when the next delivery is due (a query whose answer a busy worker hears late, while
        its sends drain).
        """
        if after_claim and self._wakeup.wait(ROOM_WAIT):
            self._wakeup.clear()
            return
        wait = self.settings.retry_period
        try:
            until_due = deliveries.seconds_until_next_due(self.pool, self.rules,
                                                          self._queue.saturated())
        except DatabaseError:
            until_due = None
        if until_due is not None:
            wait = min(wait, until_due)
        if wait > 0:
            self._wakeup.wait(wait)
        self._wakeup.clear()

    def _launch(self, claimed: list[Claimed], began: float) -> None:
        """Queue what a claim that began at `began` took; hand back what may not be sent."""
        if not claimed:
            return
        self.telemetry.transition(Status.PENDING, Status.DELIVERING, len(claimed))
        for item in claimed:
            if item.probe:
                circuit.report_probe(item.config_id, item.id, self.telemetry)
        inactive = [c for c in claimed if not c.config_active]
        changed = [c for c in claimed if c.config_active
                   and self._changed_since(c.config_id, began)]
        held_back = {claim_key(c) for c in changed}
        for item in claimed:
            self.inflight[claim_key(item)] = item
            # A claim's age counts from before its statement began, as the database's
            # `claimed_at` (the transaction's start) does: counted from the statement's return,
            # a claim that took a loaded database a second to answer would look a second
            # younger than the recovery sweep sees it, and could be sent as it goes stale.
            self._started_at[claim_key(item)] = began
            if item.config_active and claim_key(item) not in held_back:
                self._queue.add(item)
        self._fill()
        if inactive:
            self.recorder.release(inactive, reason="config inactive")
        if changed:
            self.recorder.release(changed, reason="config paused, opened or changed")

    def _fill(self) -> None:
        """Start waiting deliveries while send slots are free (and work is still taken),
        in turn across configs, none beyond its config's share of the slots, a rate-limited
        config's sends spaced by its rate (the wait holds the send slot); hand back those
        that waited, or would wait for the rate, so long that their claim could go stale
        before their result is recorded."""
        overdue = []
        while self._claiming and (item := self._queue.take()) is not None:
            now = time.monotonic()
            age = now - self._started_at[claim_key(item)]
            pace = self._pacer.wait(item.config_id, item.rate_per_second, now)
            if may_send(age + pace, http_timeout=self.settings.http_timeout,
                        claim_timeout=self.settings.claim_timeout):
                self._pacer.reserve(item.config_id, item.rate_per_second, now)
                self._sends.spawn(self._attempt, item, pace)
            else:
                self._queue.done(item.config_id)
                overdue.append(item)
        if overdue:
            log.warning("claims waited too long to be sent before they could go stale; "
                        "handed back", extra={"deliveries": len(overdue)})
            self.recorder.release(overdue, reason="claim waited too long to be sent")

    # -- config changes ---------------------------------------------------------------------

    def _watch_changes(self) -> None:
        """Every CHANGE_POLL, hand back what waits of a config whose version grew since its
        claim; a failed look is tried again at the next one."""
        while self._claiming:
            gevent.sleep(CHANGE_POLL)
            pacing = list(self._pacing.values())
            waiting = self._queue.waiting_configs() | {c.config_id for c in pacing}
            if not waiting:
                continue
            try:
                versions = deliveries.config_versions(self.pool, waiting)
            except DatabaseError as error:
                log.warning("looking for changed configs failed; trying again",
                            extra={"error": str(error)})
                continue
            self._outdated.update(claim_key(c) for c in pacing if claim_key(c) in self._pacing
                                  and c.config_version < versions.get(c.config_id, 0))
            outdated = self._queue.withdraw_outdated(versions)
            if outdated:
                self.recorder.release(outdated, reason="config paused, opened or changed")

    # -- sending ----------------------------------------------------------------------------

    def _attempt(self, claimed: Claimed, pace: float = 0.0) -> None:
        key = claim_key(claimed)
        try:
            if pace:
                self._pacing[key] = claimed
                try:
                    gevent.sleep(pace)  # the config's rate: this worker's last send was just now
                finally:
                    self._pacing.pop(key, None)
                if self._changed_while_pacing(claimed):
                    self.recorder.release([claimed], reason="config paused, opened or changed"
                                          if self._claiming else "shutdown")
                    return
            self._posting[key] = time.monotonic()
            result = self._send(claimed)
            self._posting.pop(claim_key(claimed), None)
            self.recorder.put(result)
        finally:
            if self._queue.done(claimed.config_id):
                self._wakeup.set()  # room again for a config the claimer left out
            self._slot_freed.set()
            self._fill()

    def _changed_while_pacing(self, claimed: Claimed) -> bool:
        """Return True when a send that waited for its config's rate must not go: the worker
        is stopping, or its config changed since the claim (heard by NOTIFY or seen by the
        version poll)."""
        key = claim_key(claimed)
        outdated = key in self._outdated
        self._outdated.discard(key)
        return (outdated or not self._claiming
                or self._changed_since(claimed.config_id, self._started_at[key]))

    def _changed_since(self, config_id: str, moment: float) -> bool:
        """Return True when config `config_id` was heard to change at or after the monotonic
        `moment` (a claim that began before may hold what must not be sent)."""
        return self._changed.get(config_id, -math.inf) >= moment

    def _send(self, claimed: Claimed) -> Finished:
        try:
            body = outgoing.body(claimed)
            headers = outgoing.headers(claimed, body)
            tracing = self.telemetry.tracing
            with tracing.attempt_span(outgoing.span_attributes(claimed),
                                      parent=outgoing.trace_parent(claimed)) as (span, context):
                headers.update(context)
                sent_at = self._database_time(claimed)
                response = self.sender.post(claimed.endpoint, body, headers)
                span.set_attribute("http.response.status_code", response.status_code)
            result = judge(claimed, response, self.policy, now=self._database_time(claimed),
                           rng=self.rng, retryable=self.settings.retryable_status_codes,
                           sent_at=sent_at, request_headers=outgoing.recorded(headers))
        except Exception:
            log.exception("attempt crashed; handing the delivery back",
                          extra={"delivery_id": claimed.id})
            return claimed, None, None
        return claimed, response, result

    def _database_time(self, claimed: Claimed):
        """Return the time now on the database's clock, from the claim's `now()`."""
        elapsed = time.monotonic() - self._started_at[claim_key(claimed)]
        return claimed.claimed_at + timedelta(seconds=elapsed)

    # -- recording --------------------------------------------------------------------------

    def _record_interrupted(self, deadline: float) -> None:
        """Record the sends cut short by the stop as `interrupted` attempts, due again now."""
        now = time.monotonic()
        batch = []
        for key, started in self._posting.items():
            claimed = self.inflight.get(key)
            if claimed:
                response = interruption(now - started)
                batch.append((claimed, response, interrupted(
                    claimed, response, max_attempts=self.policy.max_attempts)))
        self._posting.clear()
        if not batch:
            return
        try:
            self.recorder.record(batch, deadline=deadline)
        except DatabaseError:
            log.error("could not record interrupted attempts; their claims will be recovered",
                      extra={"deliveries": len(batch)})

    def _free(self, claimed: Claimed) -> None:
        self.inflight.pop(claim_key(claimed), None)
        self._started_at.pop(claim_key(claimed), None)
        self._slot_freed.set()
