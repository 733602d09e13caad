// Deliveries: the API's filters (kept in the address, so a view can be shared), paging both
// ways, the two orders, and the bulk replay of a filter with a dry run first.

import { describe, gql, newKey, viewer } from "../api.js";
import { configPicker, rememberConfigs } from "../picker.js";
import { narrowedTo, platform, rememberTenants, tenantLink, withTenant } from "../tenancy.js";
import {
  ask, badge, failure, h, heading, loading, notify, number, relative, startPage, table, time,
} from "../ui.js";

const STATUSES = ["PENDING", "DELIVERING", "SUCCEEDED", "FAILED", "CANCELLED"];

const LIST = `query Deliveries($filter: DeliveryFilter, $first: Int, $after: String, $last: Int,
    $before: String, $orderBy: DeliveryOrder!, $withTenant: Boolean!) {
  deliveries(filter: $filter, first: $first, after: $after, last: $last, before: $before,
             orderBy: $orderBy) {
    totalCount totalCountIsExact
    edges { node { id eventId eventType configId configName status attemptCount
                   replayGeneration nextAttemptAt lastStatusCode lastError createdAt
                   heldBy { by until } tenant @include(if: $withTenant) { uid name } } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
}`;

const REPLAY_FIELDS = `replayed expedited skipped { deliveryId reason } hasMore nextCursor
  dryRun wouldReplay wouldReplayIsExact sample { id eventType configName status createdAt }`;
const BULK = `mutation Bulk($filter: DeliveryFilter!, $after: String, $dryRun: Boolean!) {
  replayDeliveries(filter: $filter, first: 200, after: $after, dryRun: $dryRun) {
    ${REPLAY_FIELDS}
  }
}`;

const PAGE = 50;
const HELD_WORDS = { PAUSE: "paused", CIRCUIT: "circuit", ORDERING_KEY: "ordering key" };

function shorten(text, width) {
  const line = text.replace(/\s+/g, " ");
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}
const DAY = 24 * 3600 * 1000;

/** The status codes a filter names: numbers, and classes such as `5xx`; a word that is
 * neither is an error the page shows in words. */
export function codesOf(text) {
  if (!text) return null;
  return text.split(",").map((v) => v.trim()).filter(Boolean).flatMap((word) => {
    const whole = word.match(/^([1-5])xx$/i);
    if (whole) return Array.from({ length: 100 }, (_, i) => Number(whole[1]) * 100 + i);
    if (/^\d{1,3}$/.test(word)) return [Number(word)];
    throw new Error(`"${word}" is not a status code: give numbers such as 500 or 0 (no ` +
      "response), or a class such as 5xx");
  });
}

function list(query, name) {
  const value = query.get(name);
  return value ? value.split(",").map((v) => v.trim()).filter(Boolean) : null;
}

function instant(value) {
  return value ? new Date(value).toISOString() : null;
}

/** Return the API filter that the address's query describes. */
export function filterOf(query) {
  const filter = {
    tenant: narrowedTo(query),
    status: list(query, "status"),
    configIds: list(query, "config"),
    eventTypes: list(query, "type"),
    eventId: query.get("event") || null,
    webhookId: query.get("webhook") || null,
    lastStatusCodes: codesOf(query.get("code")),
    createdAfter: instant(query.get("after_time")),
    createdBefore: instant(query.get("before_time")),
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== null));
}

function localInput(value) {
  if (!value) return "";
  const date = new Date(value);
  return new Date(date - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function filterForm(query) {
  const statuses = new Set(list(query, "status") || []);
  const tenant = narrowedTo(query);
  const field = (id, label, input) => h("div", { class: "field" },
    h("label", { for: id }, label), input);
  const form = h("form", { class: "filters", "aria-label": "Filter deliveries",
    onsubmit: (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const next = new URLSearchParams();
      const joined = (name) => data.getAll(name).filter(Boolean).join(",");
      for (const [key, name] of [["status", "status"], ["config", "config"]]) {
        if (joined(name)) next.set(key, joined(name));
      }
      for (const name of ["type", "event", "webhook", "code", "order"]) {
        const value = String(data.get(name) || "").trim();
        if (value) next.set(name, value.replace(/\s*,\s*/g, ","));
      }
      for (const name of ["after_time", "before_time"]) {
        if (data.get(name)) next.set(name, new Date(data.get(name)).toISOString());
      }
      location.hash = withTenant(`#/deliveries?${next}`, tenant);
    } },
  h("fieldset", { class: "statuses" }, h("legend", {}, "Status"),
    STATUSES.map((status) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "status", value: status,
        checked: statuses.has(status) }), status.toLowerCase()))),
  field("filter-config", "Configs",
    configPicker({ id: "filter-config", name: "config", selected: list(query, "config") || [],
      tenant })),
  field("filter-type", "Event types", h("input", { id: "filter-type", name: "type",
    value: query.get("type") || "", placeholder: "order.paid, …" })),
  field("filter-event", "Event id", h("input", { id: "filter-event", name: "event",
    value: query.get("event") || "" })),
  field("filter-webhook", "Webhook id", h("input", { id: "filter-webhook", name: "webhook",
    value: query.get("webhook") || "", placeholder: "msg_… (as the receiver logged it)" })),
  field("filter-code", "Last status codes", h("input", { id: "filter-code", name: "code",
    value: query.get("code") || "", placeholder: "500, 5xx, 0" })),
  field("filter-after", "Created after", h("input", { id: "filter-after", name: "after_time",
    type: "datetime-local", value: localInput(query.get("after_time")) })),
  field("filter-before", "Created before", h("input", { id: "filter-before",
    name: "before_time", type: "datetime-local", value: localInput(query.get("before_time")) })),
  field("filter-order", "Order", h("select", { id: "filter-order", name: "order" },
    h("option", { value: "CREATED_AT_DESC" }, "newest first"),
    h("option", { value: "NEXT_ATTEMPT_AT",
      selected: query.get("order") === "NEXT_ATTEMPT_AT" }, "next attempt soonest"))),
  h("div", { class: "actions" },
    h("button", { type: "submit" }, "Apply filters"),
    h("a", { class: "button secondary", href: withTenant("#/deliveries", tenant) }, "Clear")));
  return form;
}

function pageLink(query, changes) {
  const next = new URLSearchParams(query);
  for (const name of ["cursor_after", "cursor_before"]) next.delete(name);
  for (const [name, value] of Object.entries(changes)) next.set(name, value);
  return `#/deliveries?${next}`;
}

function bulkPanel(filter) {
  const panel = h("section", { class: "card bulk", "aria-label": "Bulk replay" });
  const windowed = { ...filter };
  const defaulted = !windowed.createdAfter;
  if (defaulted) windowed.createdAfter = new Date(Date.now() - DAY).toISOString();
  const start = h("button", { type: "button", class: "secondary", onclick: () => dryRun() },
    "Replay matching deliveries…");
  panel.append(h("h2", {}, "Bulk replay"),
    h("p", { class: "muted" }, "Replays the failed and expedites the pending deliveries this " +
      "filter matches", defaulted ? " (created in the last 24 hours: set “Created after” for " +
      "another window)" : "", ". A dry run shows how many first; nothing changes until you " +
      "confirm."), start);

  async function dryRun() {
    start.disabled = true;
    let result;
    try {
      result = (await gql(BULK, { filter: windowed, dryRun: true })).replayDeliveries;
    } catch (error) {
      panel.append(failure(error));
      start.disabled = false;
      return;
    }
    const count = `${result.wouldReplayIsExact ? "" : "about "}${number(result.wouldReplay)}`;
    const outcome = h("div", { class: "dry-run", role: "status" },
      h("p", {}, h("strong", {}, `Dry run: ${count} deliveries would be replayed or ` +
        "expedited.")),
      result.sample.length ? table(["Id", "Status", "Event type", "Config", "Created"],
        result.sample.map((d) => h("tr", {},
          h("td", {}, h("a", { href: `#/deliveries/${d.id}` }, d.id)),
          h("td", {}, badge(d.status)), h("td", {}, d.eventType),
          h("td", {}, d.configName || ""), h("td", {}, time(d.createdAt)))),
        "A sample") : null);
    panel.append(outcome);
    if (!result.wouldReplay) return;
    outcome.append(h("button", { type: "button", class: "danger", onclick: async (event) => {
      event.target.disabled = true;
      if (!await ask(`Replay ${count} deliveries now?`, "Replay them")) {
        event.target.disabled = false;
        return;
      }
      await replayAll(outcome);
    } }, `Replay ${count} deliveries`));
  }

  async function replayAll(outcome) {
    // One idempotency key per click; each page of the replay sends it with the page's number,
    // so a page sent again (Resume after a failure) replays nothing twice.
    const key = newKey();
    const progress = h("progress", { max: "1", value: "0", "aria-label": "Bulk replay" });
    const line = h("p", { role: "status" }, "Starting…");
    outcome.append(progress, line);
    const state = { after: null, page: 0, replayed: 0, expedited: 0, skipped: 0 };
    async function run() {
      try {
        do {
          const result = (await gql(BULK, { filter: windowed, after: state.after, dryRun: false },
            { idempotencyKey: `${key}-${state.page}` })).replayDeliveries;
          state.replayed += result.replayed.length;
          state.expedited += result.expedited.length;
          state.skipped += result.skipped.length;
          state.after = result.hasMore ? result.nextCursor : null;
          state.page += 1;
          line.textContent = `${state.replayed} replayed, ${state.expedited} expedited, ` +
            `${state.skipped} skipped${state.after ? " so far…" : "."}`;
          line.className = "";
        } while (state.after);
        progress.value = 1;
        notify(`Bulk replay done: ${line.textContent}`);
      } catch (error) {
        line.textContent = `Stopped: ${describe(error)}`;
        line.className = "error";
        const resume = h("button", { type: "button", onclick: () => { resume.remove(); run(); } },
          "Resume the replay");
        line.after(resume);
      }
    }
    await run();
  }
  return panel;
}

export async function deliveriesPage({ query }) {
  const show = startPage();
  show(heading("Deliveries"), loading());
  let filter;
  try {
    filter = filterOf(query);
  } catch (error) {
    show(heading("Deliveries"), h("p", { class: "error", role: "alert" }, error.message),
      h("details", { class: "card", open: true }, h("summary", {}, "Filters"),
        filterForm(query)));
    return;
  }
  const backwards = query.has("cursor_before");
  const variables = {
    filter,
    orderBy: query.get("order") === "NEXT_ATTEMPT_AT" ? "NEXT_ATTEMPT_AT" : "CREATED_AT_DESC",
    first: backwards ? null : PAGE, after: query.get("cursor_after"),
    last: backwards ? PAGE : null, before: query.get("cursor_before"),
    withTenant: platform(),
  };
  let data;
  try {
    data = await gql(LIST, variables);
  } catch (error) {
    show(heading("Deliveries"), failure(error),
      h("p", {}, h("a", { href: withTenant("#/deliveries", narrowedTo(query)) },
        "Clear the filters")));
    return;
  }
  const { deliveries } = data;
  rememberConfigs(deliveries.edges.map(({ node }) => ({ id: node.configId,
    name: node.configName })));
  if (variables.withTenant) rememberTenants(deliveries.edges.map(({ node }) => node.tenant));
  const page = deliveries.pageInfo;
  const total = `${deliveries.totalCountIsExact ? "" : "about "}` +
    `${number(deliveries.totalCount)} matching` +
    `${deliveries.totalCountIsExact ? "" : " (an estimate: there are many)"}`;
  const due = variables.orderBy === "NEXT_ATTEMPT_AT";
  show(
    heading("Deliveries", h("span", { class: "muted", id: "total" }, total)),
    h("details", { class: "card", open: true },
      h("summary", {}, "Filters"), filterForm(query)),
    table(["Id", "Status", "Event type", variables.withTenant ? "Tenant" : null, "Config",
      "Attempts", "Last code", "Last error", due ? "Next attempt" : "Created"].filter(Boolean),
    deliveries.edges.map(({ node }) => h("tr", {},
      h("td", {}, h("a", { href: `#/deliveries/${node.id}` }, node.id)),
      h("td", {}, badge(node.status), node.heldBy ? h("span", { class: "held" },
        ` held: ${HELD_WORDS[node.heldBy.by]}`) : null),
      h("td", {}, node.eventType),
      variables.withTenant ? h("td", {}, tenantLink(node.tenant)) : null,
      h("td", {}, h("a", { href: `#/configs/${encodeURIComponent(node.configId)}`,
        title: node.configId }, node.configName || node.configId)),
      h("td", { class: "num" }, node.replayGeneration
        ? `${node.attemptCount} (gen ${node.replayGeneration})` : String(node.attemptCount)),
      h("td", { class: "num" }, node.lastStatusCode ?? "—"),
      h("td", { class: "wrap", title: node.lastError || "" },
        node.lastError ? shorten(node.lastError, 60) : "—"),
      h("td", {}, due ? relative(node.nextAttemptAt) : time(node.createdAt))))),
    h("nav", { class: "pager", "aria-label": "Pages" },
      page.hasPreviousPage ? h("a", { class: "button secondary", rel: "prev",
        href: pageLink(query, { cursor_before: page.startCursor }) }, "← Previous") : null,
      page.hasNextPage ? h("a", { class: "button secondary", rel: "next",
        href: pageLink(query, { cursor_after: page.endCursor }) }, "Next →") : null),
    viewer.canMutate ? bulkPanel(filter) : null);
}
