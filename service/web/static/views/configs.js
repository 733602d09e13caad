// Configs: the list with recent success rates, creation, and one config's page with its
// chart, edit form and the operator's actions (rotate secret, activate, deactivate, delete).

import { describe, gql, newKey, viewer } from "../api.js";
import { failingNow, healthBadge, lastFailure, successRate } from "../health.js";
import { rememberConfigs } from "../picker.js";
import { narrowedTo, platform, rememberTenants, tenantLink, withTenant } from "../tenancy.js";
import {
  ask, askWithReason, attemptChart, badge, failure, h, heading, loading, notify, number, startPage, table,
  listAddress, local, relative, searchBox, time,
} from "../ui.js";

const CONFIG_FIELDS = `id name endpoint eventTypes active createdAt updatedAt
  health { state consecutiveFailures openedAt nextProbeAt lastFailure lastFailureAt pausedAt
           reason }`;

const CONFIGS = `query Configs($filter: ConfigFilter, $first: Int, $after: String, $last: Int,
    $before: String, $withTenant: Boolean!) {
  configs(filter: $filter, first: $first, after: $after, last: $last, before: $before) {
    totalCount totalCountIsExact
    edges { node { ${CONFIG_FIELDS} recentAttempts(hours: 24) { attempts successRate }
                   tenant @include(if: $withTenant) { uid name } } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
}`;
const PAGE = 50;

const CONFIG = `query Config($id: ID!, $ids: [ID!], $minutes: Int!, $bucket: Int!,
    $withTenant: Boolean!) {
  config(id: $id) {
    ${CONFIG_FIELDS} ordering blockOnFailure tenant @include(if: $withTenant) { uid name }
    healthChanges(first: 20) { edges { node { changedAt change actor reason } } hasNextPage }
    blockedKeys(first: 50) {
      edges { node { orderingKey deliveryId sequence since lastStatusCode lastError waiting } }
      hasNextPage
    }
  }
  attemptHistory(minutes: $minutes, bucketMinutes: $bucket, configIds: $ids) {
    since bucketSeconds complete
    buckets { start attempts succeeded outcomes { outcome count } }
    configs { configId attempts succeeded successRate }
  }
  pending: deliveries(filter: {configIds: $ids, status: [PENDING]}, first: 1) {
    totalCount totalCountIsExact
  }
  failed: deliveries(filter: {configIds: $ids, status: [FAILED]}, first: 1) {
    totalCount totalCountIsExact
  }
  failing: deliveries(filter: {configIds: $ids, status: [FAILED, PENDING]}, first: 10) {
    edges { node { id status lastStatusCode lastError updatedAt attemptCount } }
  }
}`;

// The windows a config page shows its attempts over, each with buckets that suit it.
const WINDOWS = {
  "15m": { label: "15 min", minutes: 15, bucket: 1 },
  "1h": { label: "1 h", minutes: 60, bucket: 5 },
  "24h": { label: "24 h", minutes: 24 * 60, bucket: 60 },
  "7d": { label: "7 d", minutes: 7 * 24 * 60, bucket: 360 },
};

function windowPicker(id, chosen) {
  return h("nav", { class: "windows", "aria-label": "Window" },
    Object.entries(WINDOWS).map(([key, w]) => h("a", {
      href: `#/configs/${encodeURIComponent(id)}?window=${key}`,
      class: "button secondary", "aria-current": key === chosen ? "true" : null,
    }, w.label)));
}

function timeline(config) {
  const changes = config.healthChanges.edges.map(({ node }) => node);
  if (!changes.length) return h("p", { class: "muted" }, "No change of health yet.");
  return table(["When", "Change", "By", "Why"], changes.map((c) => h("tr", {},
    h("td", {}, relative(c.changedAt)),
    h("td", {}, c.change.toLowerCase()),
    h("td", {}, c.actor || "the service"),
    h("td", { class: "wrap" }, c.reason || "—"))), "Health changes, newest first");
}

/** The failed and retrying deliveries of a page that have an answer or an error, with their
 * config when `withConfig` (a tenant's, which has many). */
export function recentFailures(failing, { withConfig = false } = {}) {
  const rows = failing.edges.map(({ node }) => node).filter((d) => d.lastError || d.lastStatusCode);
  if (!rows.length) return h("p", { class: "muted" }, "No failed or retrying delivery.");
  return table(["Delivery", "Status", withConfig ? "Config" : null, "Answer", "When"]
    .filter(Boolean), rows.map((d) => h("tr", {},
    h("td", {}, h("a", { href: `#/deliveries/${d.id}` }, d.id)),
    h("td", {}, badge(d.status)),
    withConfig ? h("td", {}, configLink({ id: d.configId, name: d.configName })) : null,
    h("td", { class: "wrap" }, d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : "no answer",
      d.lastError ? h("span", { class: "muted" }, ` · ${d.lastError}`) : null),
    h("td", {}, relative(d.updatedAt)))));
}

/** A link to a config's page, by name (the id on hover). */
export function configLink(config) {
  return h("a", { href: `#/configs/${encodeURIComponent(config.id)}`, title: config.id },
    config.name || config.id);
}

const CREATE = `mutation Create($input: CreateConfigInput!) {
  createConfig(input: $input) { config { id } secret }
}`;
const UPDATE = `mutation Update($id: ID!, $input: UpdateConfigInput!) {
  updateConfig(id: $id, input: $input) { id }
}`;
const ROTATE = `mutation Rotate($id: ID!) { rotateConfigSecret(id: $id) { secret } }`;
const ACTIVATE = `mutation Activate($id: ID!) { activateConfig(id: $id) { id } }`;
const DEACTIVATE = `mutation Deactivate($id: ID!) {
  deactivateConfig(id: $id) { cancelledDeliveries }
}`;
const DELETE = `mutation Delete($id: ID!) { deleteConfig(id: $id) { cancelledDeliveries } }`;
const REPLAY = `mutation Replay($id: ID!) { replayDelivery(id: $id) { action } }`;
const SKIP = `mutation Skip($id: ID!) { skipDelivery(id: $id) { orderingKey sequence } }`;
const PAUSE = `mutation Pause($id: ID!, $reason: String) {
  pauseConfig(id: $id, reason: $reason) { message } }`;
const RESUME = `mutation Resume($id: ID!) { resumeConfig(id: $id) { message } }`;
const RESET = `mutation Reset($id: ID!, $reason: String) {
  resetCircuit(id: $id, reason: $reason) { message } }`;
const HEALTH_STATES = ["HEALTHY", "PAUSED", "OPEN", "HALF_OPEN"];

function state(config) {
  return config.active ? badge("active") : badge("inactive");
}

function health(config) {
  return healthBadge(config.health);
}

/** The address of the list with `changes` made to its query. */
function listLink(query, changes) {
  return listAddress("#/configs", query, changes);
}

function healthFilter(query) {
  const select = h("select", { id: "health-filter", "aria-label": "Health",
    onchange: () => { location.hash = listLink(query, { health: select.value }); } },
  h("option", { value: "" }, "any health"),
  HEALTH_STATES.map((s) => h("option", { value: s, selected: query.get("health") === s },
    s.toLowerCase().replace("_", " "))));
  return select;
}

function healthText(health) {
  const parts = [failingNow(health) ? "failing: the circuit is closed, the endpoint does not work"
    : health.state.toLowerCase().replace("_", " ")];
  if (health.pausedAt) parts.push(`paused ${local(health.pausedAt)}`);
  if (health.openedAt) parts.push(`circuit opened ${local(health.openedAt)}`);
  if (health.nextProbeAt) parts.push(`next probe ${local(health.nextProbeAt)}`);
  if (health.consecutiveFailures) parts.push(`${health.consecutiveFailures} failures in a row`);
  if (health.reason) parts.push(`reason: ${health.reason}`);
  return parts.join(" · ");
}

function counted(connection) {
  return `${connection.totalCountIsExact ? "" : "about "}${number(connection.totalCount)}`;
}

function typesOf(text) {
  return text.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
}

export async function configsPage({ query }) {
  const show = startPage();
  const tenant = narrowedTo(query);
  const create = viewer.canMutate
    ? h("a", { class: "button", href: withTenant("#/configs/new", tenant) }, "New config") : null;
  const tools = () => h("div", { class: "toolbar", role: "search" }, healthFilter(query),
    searchBox({ id: "config-search", label: "Search configs by name or endpoint",
      placeholder: "search name or endpoint…", value: query.get("search") || "" },
    (search) => { location.hash = listLink(query, { search }); }));
  const typing = document.activeElement?.id === "config-search";
  const keepTyping = () => { // the list follows the typing; the cursor stays in the box
    if (!typing) return;
    const input = document.getElementById("config-search");
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  };
  show(heading("Configs", create), tools(), loading());
  keepTyping();
  const backwards = Boolean(query.get("cursor_before"));
  const filter = Object.fromEntries(Object.entries({
    search: query.get("search") || null, health: query.get("health") || null, tenant,
  }).filter(([, value]) => value !== null));
  const showTenant = platform();
  let data;
  try {
    data = await gql(CONFIGS, { filter, first: backwards ? null : PAGE,
      after: query.get("cursor_after"), last: backwards ? PAGE : null,
      before: query.get("cursor_before"), withTenant: showTenant });
  } catch (error) {
    show(heading("Configs", create), tools(), failure(error));
    keepTyping();
    return;
  }
  const { configs } = data;
  rememberConfigs(configs.edges.map(({ node }) => node));
  if (showTenant) rememberTenants(configs.edges.map(({ node }) => node.tenant));
  const page = configs.pageInfo;
  const total = `${configs.totalCountIsExact ? "" : "about "}${number(configs.totalCount)} ` +
    (Object.keys(filter).length ? "matching" : "configs");
  show(
    heading("Configs", create, h("span", { class: "muted", id: "total" }, total)),
    tools(),
    table(["Name", showTenant ? "Tenant" : null, "Endpoint", "State", "Health", "Last failure",
      "Attempts (24 h)", "Success rate"].filter(Boolean),
    configs.edges.map(({ node }) => {
      const rate = node.recentAttempts;
      return h("tr", {},
        h("td", {}, configLink(node)),
        showTenant ? h("td", {}, tenantLink(node.tenant)) : null,
        h("td", { class: "wrap" }, node.endpoint),
        h("td", {}, state(node)),
        h("td", {}, health(node)),
        h("td", { class: "wrap" }, lastFailure(node.health)),
        h("td", { class: "num" }, number(rate.attempts)),
        h("td", { class: "num" }, successRate(rate.successRate, node.health)));
    })),
    h("nav", { class: "pager", "aria-label": "Pages" },
      page.hasPreviousPage ? h("a", { class: "button secondary", rel: "prev",
        href: listLink(query, { cursor_before: page.startCursor }) }, "← Previous") : null,
      page.hasNextPage ? h("a", { class: "button secondary", rel: "next",
        href: listLink(query, { cursor_after: page.endCursor }) }, "Next →") : null));
  keepTyping();
}

/** The ordering keys a failed delivery holds, each with Replay and Skip for an operator. */
function heldKeys(config, reload) {
  const keys = config.blockedKeys.edges.map((edge) => edge.node);
  const act = async (mutation, id, done, options = {}) => {
    try {
      const data = await gql(mutation, { id }, options);
      await reload();
      notify(done(data));
    } catch (error) {
      notify(describe(error), "error");
    }
  };
  return h("section", { "aria-label": "Held keys" },
    h("h2", {}, `Held keys (${keys.length}${config.blockedKeys.hasNextPage ? "+" : ""})`),
    keys.length ? table(["Key", "Held by", "Since", "Last answer", "Waiting", ""],
      keys.map((key) => h("tr", {},
        h("td", {}, h("code", {}, key.orderingKey)),
        h("td", {}, h("a", { href: `#/deliveries/${key.deliveryId}` },
          `${key.deliveryId} (#${key.sequence})`)),
        h("td", {}, time(key.since)),
        h("td", { class: "wrap" }, key.lastError || String(key.lastStatusCode ?? "—")),
        h("td", { class: "num" }, number(key.waiting)),
        h("td", {}, viewer.canMutate ? h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => act(REPLAY, key.deliveryId,
            () => `Delivery ${key.deliveryId} replayed: the key goes on once it succeeds.`,
            { idempotencyKey: newKey() }) }, "Replay"),
          h("button", { type: "button", class: "danger", onclick: async () => {
            if (!await ask(`Skip delivery ${key.deliveryId}? Key ${key.orderingKey} goes on ` +
              "without it; it stays failed, and can still be replayed.", "Skip")) return;
            act(SKIP, key.deliveryId, () => `Key ${key.orderingKey} goes on past ` +
              `delivery ${key.deliveryId}.`);
          } }, "Skip")) : null))))
      : h("p", { class: "muted" }, "No key is held: every key's deliveries flow."));
}

// The secret of a config just created, shown once on the config's page, then forgotten.
let secretToShow = null;

function secretBox(secret, what) {
  return h("div", { class: "card secret", role: "alert" },
    h("h2", {}, what),
    h("p", {}, "Copy it now: it is shown this once and never again."),
    h("code", { class: "secret-value" }, secret));
}

function configForm(config, onSubmit, label) {
  const name = h("input", { id: "config-name", name: "name", value: config?.name || "" });
  const endpoint = h("input", { id: "config-endpoint", name: "endpoint", type: "url",
    required: true, value: config?.endpoint || "", placeholder: "https://example.com/hooks" });
  const types = h("input", { id: "config-types", name: "eventTypes", required: true,
    value: config ? config.eventTypes.join(", ") : "", placeholder: "order.paid, order.refunded" });
  const ordering = h("select", { id: "config-ordering", name: "ordering" },
    h("option", { value: "UNORDERED" }, "unordered: each delivery on its own"),
    h("option", { value: "PER_KEY", selected: config?.ordering === "PER_KEY" },
      "per key: one key's deliveries one at a time, in order"));
  const block = h("input", { id: "config-block", name: "blockOnFailure", type: "checkbox",
    checked: config ? config.blockOnFailure : true });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  return h("form", { class: "card form", onsubmit: async (event) => {
    event.preventDefault();
    error.hidden = true;
    try {
      await onSubmit({ name: name.value.trim() || null, endpoint: endpoint.value.trim(),
        eventTypes: typesOf(types.value), ordering: ordering.value,
        blockOnFailure: block.checked });
    } catch (failed) {
      error.textContent = describe(failed);
      error.hidden = false;
    }
  } },
  h("label", { for: "config-name" }, "Name"), name,
  h("label", { for: "config-endpoint" }, "Endpoint URL"), endpoint,
  h("label", { for: "config-types" }, "Event types (comma-separated, exact)"), types,
  h("label", { for: "config-ordering" }, "Ordering"), ordering,
  h("label", { class: "check", for: "config-block" }, block,
    " a failed delivery holds its key until replayed (ordered only)"),
  error,
  h("button", { type: "submit" }, label));
}

export async function newConfigPage({ query }) {
  const show = startPage();
  const tenant = narrowedTo(query);
  show(heading("New config", tenant ? h("span", { class: "muted" }, `for the tenant ${tenant}`)
    : null), configForm(null, async (input) => {
    const created = (await gql(CREATE, { input: tenant ? { ...input, tenant } : input }))
      .createConfig;
    secretToShow = { id: created.config.id, secret: created.secret };
    notify("Config created.", "info", { beforeLeaving: true });
    location.hash = `#/configs/${encodeURIComponent(created.config.id)}`;
  }, "Create config"));
}

function actions(config, pending, reload) {
  const id = config.id;
  const run = async (mutation, done, extra = {}) => {
    try {
      const data = await gql(mutation, { id, ...extra });
      await reload();
      done(data);
    } catch (error) {
      notify(describe(error), "error");
    }
  };
  const healthState = config.health.state;
  return h("div", { class: "actions", role: "group", "aria-label": "Config actions" },
    healthState === "PAUSED"
      ? h("button", { type: "button", onclick: () => run(RESUME,
        (data) => notify(data.resumeConfig.message)) }, "Resume")
      : h("button", { type: "button", class: "secondary", onclick: async () => {
        const answer = await askWithReason(`Pause ${config.name || id}? Its deliveries stay ` +
          "pending and nothing is attempted until you resume it; nothing is cancelled.", "Pause");
        if (!answer) return;
        run(PAUSE, (data) => notify(data.pauseConfig.message), answer);
      } }, "Pause"),
    ["OPEN", "HALF_OPEN"].includes(healthState)
      ? h("button", { type: "button", class: "secondary", onclick: async () => {
        const answer = await askWithReason(`Reset the circuit of ${config.name || id}? Its ` +
          "held deliveries are sent again at once (gradually, from one at a time), as if the " +
          "endpoint were known to be back.", "Reset circuit");
        if (!answer) return;
        run(RESET, (data) => notify(data.resetCircuit.message), answer);
      } }, "Reset circuit") : null,
    h("button", { type: "button", class: "secondary", onclick: async () => {
      if (!await ask("Rotate this config's secret? The old one keeps signing alongside the " +
        "new one for the rotation grace period.", "Rotate secret")) return;
      run(ROTATE, (data) => document.getElementById("main")
        .prepend(secretBox(data.rotateConfigSecret.secret, "The new signing secret")));
    } }, "Rotate secret"),
    config.active
      ? h("button", { type: "button", class: "danger", onclick: async () => {
        const count = counted(pending);
        if (!await ask(`Deactivate ${config.name || id}? This cancels its ${count} pending ` +
          "deliveries; reactivating does not bring them back.", "Deactivate")) return;
        run(DEACTIVATE, (data) => notify(
          `Deactivated; ${data.deactivateConfig.cancelledDeliveries} pending deliveries ` +
          "cancelled."));
      } }, "Deactivate")
      : h("button", { type: "button", onclick: () => run(ACTIVATE, () => notify("Activated.")) },
        "Activate"),
    h("button", { type: "button", class: "danger", onclick: async () => {
      if (!await ask(`Delete ${config.name || id}? This cancels its ${counted(pending)} ` +
        "pending deliveries; its deliveries stay inspectable.", "Delete")) return;
      run(DELETE, (data) => {
        notify(`Deleted; ${data.deleteConfig.cancelledDeliveries} pending deliveries cancelled.`,
          "info", { beforeLeaving: true });
        location.hash = "#/configs";
      });
    } }, "Delete"));
}

export async function configPage({ params: [id], query = new URLSearchParams() }) {
  const show = startPage();
  show(heading("Config"), loading());
  const reload = () => configPage({ params: [id], query });
  const chosen = WINDOWS[query.get("window")] ? query.get("window") : "24h";
  const window = WINDOWS[chosen];
  let data;
  try {
    data = await gql(CONFIG, { id, ids: [id], minutes: window.minutes, bucket: window.bucket,
      withTenant: platform() });
  } catch (error) {
    show(heading("Config"), failure(error));
    return;
  }
  const { config, attemptHistory: history, pending, failed, failing } = data;
  const rate = history.configs[0];
  const deliveries = `#/deliveries?config=${encodeURIComponent(id)}`;
  show(
    heading(config.name || config.id, state(config), health(config)),
    h("dl", { class: "facts" },
      h("dt", {}, "Id"), h("dd", {}, h("code", {}, config.id)),
      config.tenant ? [h("dt", {}, "Tenant"), h("dd", {}, tenantLink(config.tenant),
        h("span", { class: "muted" }, ` · ${config.tenant.uid}`))] : null,
      h("dt", {}, "Endpoint"), h("dd", { class: "wrap" }, config.endpoint),
      h("dt", {}, "Event types"), h("dd", {}, config.eventTypes.join(", ")),
      h("dt", {}, "Health"), h("dd", {}, healthText(config.health)),
      h("dt", {}, "Ordering"), h("dd", {}, config.ordering === "PER_KEY"
        ? `per key${config.blockOnFailure ? ", a failure holds its key" : ""}` : "unordered"),
      h("dt", {}, "Last failure"), h("dd", { class: "wrap" }, lastFailure(config.health)),
      h("dt", {}, `Success rate (${window.label})`),
      h("dd", {}, rate ? [successRate(rate.successRate, config.health),
        ` of ${number(rate.attempts)} attempts`]
        : "no attempts"),
      h("dt", {}, "Pending"), h("dd", {}, h("a", { href: `${deliveries}&status=PENDING` },
        counted(pending))),
      h("dt", {}, "Failed"), h("dd", {}, h("a", { href: `${deliveries}&status=FAILED` },
        counted(failed))),
      h("dt", {}, "Created"), h("dd", {}, time(config.createdAt)),
      h("dt", {}, "Updated"), h("dd", {}, time(config.updatedAt))),
    viewer.canMutate ? actions(config, pending, reload) : null,
    config.ordering === "PER_KEY" ? heldKeys(config, reload) : null,
    h("section", {}, h("h2", {}, `Attempts, last ${window.label}`), windowPicker(id, chosen),
      attemptChart(history)),
    h("section", {}, h("h2", {}, "Recent failures"), recentFailures(failing)),
    h("section", {}, h("h2", {}, "Health timeline"), timeline(config)),
    h("p", {}, h("a", { href: deliveries }, "All deliveries of this config"), " · ",
      h("a", { href: `${deliveries}&status=FAILED` },
        "Recover: replay its failed deliveries since a time (with a dry run first)")),
    viewer.canMutate ? h("section", {}, h("h2", {}, "Edit"),
      configForm(config, async (input) => {
        await gql(UPDATE, { id, input });
        notify("Saved.");
        await reload();
      }, "Save changes")) : null);
  if (secretToShow && secretToShow.id === id) {
    document.getElementById("main")
      .prepend(secretBox(secretToShow.secret, "The new config's signing secret"));
    secretToShow = null;
  }
}
