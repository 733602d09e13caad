// One delivery: its summary, payload, the attempt timeline with the headers each attempt sent,
// and replay / expedite (one idempotency key per click) while watching the new attempt arrive.

import { describe, gql, newKey, viewer } from "../api.js";
import { platform, tenantLink } from "../tenancy.js";
import {
  badge, elapsed, failure, h, heading, loading, notify, relative, startPage, time,
} from "../ui.js";

/** Say what holds a pending delivery back, and until when, in words. */
export function heldText(hold) {
  if (!hold) return null;
  if (hold.by === "PAUSE") {
    return [`Held: its config is paused${hold.reason ? ` (${hold.reason})` : ""}; `,
      "it is sent once the config is resumed."];
  }
  if (hold.by === "CIRCUIT") {
    return hold.until
      ? ["Held: its config's circuit is open until the next probe, ", relative(hold.until),
        hold.reason ? ` (last failure: ${hold.reason})` : "", "."]
      : ["Held: its config's circuit is half-open; a probe is in flight."];
  }
  return ["Held: it waits for ",
    hold.behind ? h("a", { href: `#/deliveries/${hold.behind}` }, `delivery ${hold.behind}`)
      : "an earlier delivery", ", the earlier delivery of its ordering key."];
}

const DELIVERY = `query Delivery($id: ID!, $withTenant: Boolean!) {
  delivery(id: $id) {
    tenant @include(if: $withTenant) { uid name }
    id webhookId eventId eventType configId configName status attemptCount replayGeneration
    nextAttemptAt lastStatusCode lastError createdAt updatedAt occurredAt payload
    heldBy { by since until reason behind }
    attempts { id attemptNumber replayGeneration endpoint outcome statusCode durationMs
               responseExcerpt error createdAt requestHeaders }
  }
}`;

const REPLAY = `mutation Replay($id: ID!) {
  replayDelivery(id: $id) { action replayGeneration nextAttemptAt }
}`;

const WATCH_SECONDS = 60;

function attemptItem(attempt) {
  const outcome = attempt.outcome.toLowerCase();  // the API's enum, the page's word
  return h("li", { class: `attempt ${outcome}` },
    h("div", { class: "attempt-head" },
      h("strong", {}, `#${attempt.attemptNumber}`),
      attempt.replayGeneration ? h("span", { class: "muted" },
        `generation ${attempt.replayGeneration}`) : null,
      badge(outcome),
      h("span", {}, attempt.statusCode ? `HTTP ${attempt.statusCode}` : "no response"),
      h("span", { class: "muted" }, elapsed(attempt.durationMs)),
      time(attempt.createdAt)),
    h("div", { class: "muted wrap" }, attempt.endpoint),
    attempt.error ? h("p", { class: "error-text" }, attempt.error) : null,
    attempt.responseExcerpt ? h("details", {},
      h("summary", {}, "Response excerpt"),
      h("pre", {}, attempt.responseExcerpt)) : null,
    attempt.requestHeaders ? h("details", {},
      h("summary", {}, "Headers sent"),
      headerList(attempt.requestHeaders, "facts attempt-headers")) : null);
}

// The order a request carries them in; the API's object has the database's (jsonb) order.
const HEADER_ORDER = ["webhook-id", "webhook-timestamp", "webhook-signature", "webhook-attempt",
  "webhook-replay-generation", "traceparent", "tracestate"];

function headerList(headers, className) {
  const rank = (name) => (HEADER_ORDER.includes(name) ? HEADER_ORDER.indexOf(name)
    : HEADER_ORDER.length);
  const names = Object.keys(headers).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return h("dl", { class: className },
    names.map((name) => [h("dt", {}, h("code", {}, name)),
      h("dd", {}, h("code", {}, headers[name]))]));
}

// The latest attempt's headers, as it sent them (the API keeps all but the constant ones).
function headersSent(delivery) {
  const latest = delivery.attempts[delivery.attempts.length - 1];
  const constant = h("p", { class: "muted" }, "Every request also carries ",
    h("code", {}, "Content-Type: application/json"), ", ",
    h("code", {}, "User-Agent: webhooks/…"), " and ", h("code", {}, "Accept-Encoding: identity"),
    "; they are not kept per attempt.");
  if (!latest) return [h("p", { class: "muted" }, "No attempt yet."), constant];
  const which = h("p", { class: "muted" }, `Attempt #${latest.attemptNumber}` +
    (latest.replayGeneration ? ` of generation ${latest.replayGeneration}` : "") + ", ",
  time(latest.createdAt), ".");
  if (!latest.requestHeaders) {
    return [which, h("p", { class: "muted headers" }, "Its headers were not kept: it was " +
      "recorded before headers were, or cut short by a stopping worker."), constant];
  }
  return [which, headerList(latest.requestHeaders, "facts headers"), constant];
}

function replayButton(delivery, watch) {
  const label = delivery.status === "FAILED" ? "Replay" : "Expedite (attempt now)";
  return h("button", { type: "button", onclick: async (event) => {
    event.target.disabled = true;
    try {
      const result = (await gql(REPLAY, { id: delivery.id },
        { idempotencyKey: newKey() })).replayDelivery;
      notify(result.action === "REPLAYED"
        ? `Replayed as generation ${result.replayGeneration}; due now.` : "Expedited; due now.");
      watch(delivery.attempts.length);
    } catch (error) {
      notify(describe(error), "error");
      event.target.disabled = false;
    }
  } }, label);
}

export async function deliveryPage({ params: [id] }) {
  const show = startPage();
  show(heading(`Delivery ${id}`), loading());
  let delivery;
  try {
    delivery = (await gql(DELIVERY, { id, withTenant: platform() })).delivery;
  } catch (error) {
    show(heading(`Delivery ${id}`), failure(error),
      h("p", {}, h("a", { href: "#/deliveries" }, "Back to the deliveries")));
    return;
  }
  const watching = h("p", { class: "muted", role: "status", id: "watch" });

  async function watch(seen) {
    const started = Date.now();
    watching.textContent = "Waiting for the new attempt…";
    while (Date.now() - started < WATCH_SECONDS * 1000) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (!location.hash.startsWith(`#/deliveries/${id}`)) return;
      let now;
      try {
        now = (await gql(DELIVERY, { id, withTenant: platform() })).delivery;
      } catch (error) {
        watching.textContent = describe(error);
        continue;
      }
      if (now.attempts.length > seen && now.status !== "DELIVERING") {
        await deliveryPage({ params: [id] });
        notify(`New attempt: ${now.attempts[now.attempts.length - 1].outcome.toLowerCase()}.`);
        return;
      }
    }
    watching.textContent = `No new attempt within ${WATCH_SECONDS} s; reload to check again.`;
  }

  const replayable = delivery.status === "FAILED"
    || (delivery.status === "PENDING" && !delivery.heldBy);
  show(
    heading(`Delivery ${delivery.id}`, badge(delivery.status)),
    h("dl", { class: "facts" },
      h("dt", {}, "Event"), h("dd", {}, h("code", {}, delivery.eventId), " · ",
        delivery.eventType),
      h("dt", {}, "Webhook id"), h("dd", {}, h("code", {}, delivery.webhookId),
        h("span", { class: "muted" }, " (the same for every retry and replay)")),
      h("dt", {}, "Config"), h("dd", {}, h("a",
        { href: `#/configs/${encodeURIComponent(delivery.configId)}` },
        delivery.configName || delivery.configId)),
      delivery.tenant ? [h("dt", {}, "Tenant"), h("dd", {}, tenantLink(delivery.tenant),
        h("span", { class: "muted" }, ` · ${delivery.tenant.uid}`))] : null,
      h("dt", {}, "Attempts"), h("dd", {}, `${delivery.attemptCount} in generation ` +
        `${delivery.replayGeneration}`),
      h("dt", {}, "Next attempt"), delivery.heldBy
        ? h("dd", { class: "held", id: "held" }, heldText(delivery.heldBy))
        : h("dd", {}, relative(delivery.nextAttemptAt)),
      h("dt", {}, "Last status code"), h("dd", {}, delivery.lastStatusCode ?? "—"),
      h("dt", {}, "Last error"), h("dd", { class: "wrap" }, delivery.lastError || "—"),
      h("dt", {}, "Event occurred"), h("dd", {}, time(delivery.occurredAt)),
      h("dt", {}, "Created"), h("dd", {}, time(delivery.createdAt)),
      h("dt", {}, "Updated"), h("dd", {}, time(delivery.updatedAt))),
    viewer.canMutate && replayable
      ? h("div", { class: "actions" }, replayButton(delivery, watch)) : null,
    watching,
    h("section", {}, h("h2", {}, `Attempts (${delivery.attempts.length})`),
      delivery.attempts.length
        ? h("ol", { class: "timeline", reversed: true },
          delivery.attempts.slice().reverse().map(attemptItem))
        : h("p", { class: "muted" }, "No attempt yet.")),
    h("section", {}, h("h2", {}, "Payload"),
      h("pre", { class: "payload" }, JSON.stringify(delivery.payload, null, 2))),
    h("section", {}, h("h2", {}, "Headers sent"), headersSent(delivery)));
}
