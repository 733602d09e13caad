// "Recover every failure since": a dry run says how many failed deliveries of the endpoint a
// bulk replay would send again (with a sample), then the replay runs page by page.

import { describe, newKey } from "/dashboard/api.js";
import { h, notify } from "/dashboard/ui.js";
import { endpointPage } from "./endpoint.js";
import { call } from "./session.js";

const RECOVER = `mutation Recover($filter: DeliveryFilter!, $after: String, $dry: Boolean!) {
  replayDeliveries(filter: $filter, after: $after, dryRun: $dry) {
    replayed hasMore nextCursor wouldReplay wouldReplayIsExact
    sample { id eventType createdAt } } }`;
const DAY_MS = 86400 * 1000;

/** A datetime-local value (the browser's zone) for `date`. */
function localValue(date) {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
  return shifted.toISOString().slice(0, 16);
}

export function recoverPanel(configId) {
  const since = h("input", { type: "datetime-local", id: "recover-since",
    value: localValue(new Date(Date.now() - DAY_MS)) });
  const result = h("div", { id: "recover-result", role: "status" });
  const filter = () => ({ configIds: [configId], status: ["FAILED"],
    createdAfter: new Date(since.value).toISOString() });

  async function recover(total) {
    let after = null, replayed = 0;
    try {
      do {
        const page = (await call(RECOVER, { filter: filter(), after, dry: false },
          { idempotencyKey: newKey() })).replayDeliveries;
        replayed += page.replayed.length;
        after = page.hasMore ? page.nextCursor : null;
      } while (after);
      notify(`Sent again: ${replayed} of ${total} failed deliveries.`, "info",
        { beforeLeaving: true });
      await endpointPage(configId);
    } catch (error) {
      notify(describe(error), "error");
    }
  }

  async function preview() {
    if (!since.value) return;
    result.replaceChildren("Counting…");
    let dry;
    try {
      dry = (await call(RECOVER, { filter: filter(), dry: true })).replayDeliveries;
    } catch (error) {
      result.replaceChildren(h("p", { class: "error" }, describe(error)));
      return;
    }
    const count = dry.wouldReplay;
    result.replaceChildren(
      h("p", { id: "recover-count" }, count
        ? `${dry.wouldReplayIsExact ? "" : "About "}${count} failed deliveries would be sent again.`
        : "No failed delivery since then."),
      dry.sample.length ? h("ul", { class: "sample" }, dry.sample.map((d) =>
        h("li", { dir: "auto" }, `${d.id} · ${d.eventType}`))) : null,
      count ? h("button", { type: "button", id: "recover-confirm", onclick: () => recover(count) },
        `Send ${count} again`) : null);
  }

  return h("section", { class: "recover", "aria-label": "Recover failures" },
    h("h2", {}, "Recover failures"),
    h("label", { for: "recover-since" }, "Every failed delivery since"), since,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "secondary", id: "recover-preview", onclick: preview },
        "Preview")),
    result);
}
