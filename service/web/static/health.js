// A config's health in words a person can act on: a closed circuit whose last attempts failed
// is "failing", not healthy (the breaker has not opened, the endpoint does not work); an
// endpoint that failed before and works again says it recovered, and its old failure and the
// window's rate read as history, not as an alarm.

import { badge, h, number, percent, relative } from "./ui.js";

/** True when the config's circuit is closed and its last attempts failed. */
export function failingNow(health) {
  return health.state === "HEALTHY" && health.consecutiveFailures > 0;
}

// How long an endpoint must have gone without a failure, its last attempt a success, to be
// called recovered: one that fails on and off is not.
const RECOVERED_AFTER_MS = 5 * 60 * 1000;

/** True when the endpoint failed before, its last attempt succeeded, and nothing failed for
 * RECOVERED_AFTER_MS. */
export function recovered(health) {
  return health.state === "HEALTHY" && !health.consecutiveFailures && Boolean(health.lastFailure)
    && Boolean(health.lastFailureAt)
    && Date.now() - new Date(health.lastFailureAt) >= RECOVERED_AFTER_MS;
}

export function healthBadge(health) {
  if (failingNow(health)) {
    return badge("failing", `failing · ${number(health.consecutiveFailures)} in a row`);
  }
  return badge(health.state);
}

/** The last failure with its time; after a recovery, marked as such and muted. */
export function lastFailure(health) {
  if (!health.lastFailure) return "—";
  const when = health.lastFailureAt ? [" · ", relative(health.lastFailureAt)] : null;
  return recovered(health)
    ? h("span", { class: "muted recovered" }, "recovered · before: ", health.lastFailure, when)
    : h("span", { class: "last-failure" }, health.lastFailure, when);
}

/** A success rate over a window: in red while the endpoint fails; after a recovery, muted and
 * saying that its failures are behind it. */
export function successRate(rate, health) {
  const text = percent(rate);
  if (rate === null || rate === undefined || rate >= 1) return text;
  if (recovered(health)) {
    return h("span", { class: "muted", title: "the failures came before it recovered" },
      text, " · recovered");
  }
  const failing = failingNow(health) || ["OPEN", "HALF_OPEN"].includes(health.state);
  return failing ? h("span", { class: "bad" }, text) : text;
}
