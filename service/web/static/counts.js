// The cards of counts shown on the overview and on a tenant's page: a tenant's deliveries by
// status (each counted up to TENANT_BOUND), its queue and its last hour of attempts.

import { duration, h, number, percent } from "./ui.js";

export const TENANT_STATS = `pending delivering succeeded failed cancelled queueDepth
  oldestDueAgeSeconds attemptsLastHour failureRatioLastHour`;
const STATUSES = ["PENDING", "DELIVERING", "SUCCEEDED", "FAILED", "CANCELLED"];
export const TENANT_BOUND = 10000; // a tenant's counts stop there

export function card(label, value, link) {
  const body = [h("span", { class: "label" }, label), h("strong", {}, value)];
  return link ? h("a", { class: "stat", href: link }, body) : h("div", { class: "stat" }, body);
}

/** A tenant's count, which stops at TENANT_BOUND: "10,000+" there. */
export function bounded(count) {
  return count >= TENANT_BOUND ? `${number(TENANT_BOUND)}+` : number(count);
}

/** The cards of a tenant's counts: deliveries by status, then its queue (`link` makes a
 * deliveries address narrowed to it). */
export function tenantCards(stats, link) {
  const due = stats.oldestDueAgeSeconds;
  return [
    h("section", { class: "stats", "aria-label": "Deliveries by status" },
      STATUSES.map((status) => card(status.toLowerCase(), bounded(stats[status.toLowerCase()]),
        link(`#/deliveries?status=${status}`)))),
    h("section", { class: "stats", "aria-label": "Queue" },
      card("queue depth", bounded(stats.queueDepth),
        link("#/deliveries?status=PENDING&order=NEXT_ATTEMPT_AT")),
      card("oldest sendable waits", due === null ? "nothing to send" : duration(due)),
      card("attempts, last hour", number(stats.attemptsLastHour)),
      card("failed attempts, last hour", percent(stats.failureRatioLastHour))),
  ];
}

