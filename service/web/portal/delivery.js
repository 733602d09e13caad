// One delivery: the request every attempt sent (headers and body, as signed), and each
// attempt's answer (status, excerpt, timing); replay it and watch the new attempt arrive.

import { describe, newKey } from "/dashboard/api.js";
import {
  elapsed, failure, h, heading, loading, notify, relative, startPage, time,
} from "/dashboard/ui.js";
import { endpointPage } from "./endpoint.js";
import { call, can } from "./session.js";

const DELIVERY = `query Delivery($id: ID!) { delivery(id: $id) {
  id webhookId eventId eventType configId status attemptCount replayGeneration nextAttemptAt
  lastStatusCode lastError createdAt requestBody heldBy { by }
  attempts { id attemptNumber replayGeneration outcome statusCode durationMs responseExcerpt
             error createdAt requestHeaders } } }`;
const REPLAY = `mutation Replay($id: ID!) { replayDelivery(id: $id) { action } }`;
const WATCH_SECONDS = 60;
// Sent with every request, so not kept with each attempt.
const CONSTANT_HEADERS = { "content-type": "application/json", "user-agent": "webhooks/…" };

function headerList(headers) {
  const all = { ...CONSTANT_HEADERS, ...headers };
  return h("dl", { class: "facts headers" }, Object.keys(all).sort().map((name) =>
    [h("dt", {}, h("code", {}, name)), h("dd", {}, h("code", { class: "wrap" }, all[name]))]));
}

function attemptItem(attempt, body) {
  const outcome = attempt.outcome.toLowerCase();
  return h("li", { class: `attempt ${outcome}`, dataset: { outcome } },
    h("div", { class: "attempt-head" },
      h("strong", {}, `Attempt ${attempt.attemptNumber}`),
      attempt.replayGeneration ? h("span", { class: "muted" },
        `replay ${attempt.replayGeneration}`) : null,
      h("span", { class: `badge ${outcome === "success" ? "healthy" : "failing"}` },
        attempt.statusCode ? `HTTP ${attempt.statusCode}` : "no answer"),
      h("span", { class: "muted" }, elapsed(attempt.durationMs)), time(attempt.createdAt)),
    attempt.error ? h("p", { class: "error-text", dir: "auto" }, attempt.error) : null,
    h("details", {}, h("summary", {}, "Request sent"),
      attempt.requestHeaders ? headerList(attempt.requestHeaders)
        : h("p", { class: "muted" }, "Its headers were not kept."),
      h("pre", { class: "body", dir: "auto" }, body)),
    h("details", {}, h("summary", {}, "Response"),
      attempt.responseExcerpt
        ? h("pre", { class: "response", dir: "auto" }, attempt.responseExcerpt)
        : h("p", { class: "muted" }, "No body.")));
}

export async function deliveryPage(id) {
  const show = startPage();
  show(heading(`Delivery ${id}`), loading());
  let delivery;
  try {
    delivery = (await call(DELIVERY, { id })).delivery;
  } catch (error) {
    show(heading(`Delivery ${id}`), failure(error));
    return;
  }
  const watching = h("p", { class: "muted", role: "status", id: "watch" });
  const replayable = delivery.status === "FAILED"
    || (delivery.status === "PENDING" && !delivery.heldBy);

  async function watch(seen) {
    const started = Date.now();
    watching.textContent = "Waiting for the new attempt…";
    while (Date.now() - started < WATCH_SECONDS * 1000) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      let now;
      try {
        now = (await call(DELIVERY, { id })).delivery;
      } catch (error) {
        watching.textContent = describe(error);
        return;
      }
      if (now.attempts.length > seen && now.status !== "DELIVERING") {
        await deliveryPage(id);
        return;
      }
    }
    watching.textContent = `No new attempt within ${WATCH_SECONDS} s.`;
  }

  const replay = h("button", { type: "button", id: "replay-delivery", onclick: async () => {
    replay.disabled = true;
    try {
      await call(REPLAY, { id }, { idempotencyKey: newKey() });
      notify("Replayed: it is sent again now.");
      watch(delivery.attempts.length);
    } catch (error) {
      notify(describe(error), "error");
      replay.disabled = false;
    }
  } }, delivery.status === "FAILED" ? "Replay" : "Send now");
  show(
    h("button", { type: "button", class: "link back",
      onclick: () => endpointPage(delivery.configId) }, "← The endpoint"),
    heading(`Delivery ${delivery.id}`,
      h("span", { class: `badge ${delivery.status.toLowerCase()}`, id: "delivery-status" },
        delivery.status.toLowerCase())),
    h("dl", { class: "facts" },
      h("dt", {}, "Event"), h("dd", { dir: "auto" }, delivery.eventType, " · ",
        h("code", {}, delivery.eventId)),
      h("dt", {}, "Webhook id"), h("dd", {}, h("code", {}, delivery.webhookId)),
      h("dt", {}, "Next attempt"), h("dd", {}, relative(delivery.nextAttemptAt)),
      h("dt", {}, "Last error"), h("dd", { dir: "auto" }, delivery.lastError || "—"),
      h("dt", {}, "Created"), h("dd", {}, time(delivery.createdAt))),
    can("REPLAY") && replayable ? h("div", { class: "actions" }, replay) : null,
    watching,
    h("section", { "aria-label": "Attempts" }, h("h2", {}, `Attempts (${delivery.attempts.length})`),
      delivery.attempts.length
        ? h("ol", { class: "timeline", reversed: true }, delivery.attempts.slice().reverse()
          .map((attempt) => attemptItem(attempt, delivery.requestBody)))
        : h("p", { class: "muted" }, "No attempt yet.")),
    h("section", { "aria-label": "Body" }, h("h2", {}, "Body sent"),
      h("pre", { class: "body", id: "request-body", dir: "auto" }, delivery.requestBody)));
}
