// Tenants (a platform token's): the list with each tenant's counts, searched by name or uid and
// paged both ways, and one tenant's page: its counts, attempts, configs, backlog and failures.

import { gql } from "../api.js";
import { TENANT_STATS, bounded, tenantCards } from "../counts.js";
import { healthBadge, lastFailure, successRate } from "../health.js";
import { rememberConfigs } from "../picker.js";
import { rememberTenants, withTenant } from "../tenancy.js";
import {
  attemptChart, badge, duration, failure, h, heading, loading, number, percent, relative,
  listAddress, searchBox, startPage, table, time,
} from "../ui.js";
import { configLink, recentFailures } from "./configs.js";

const PAGE = 50;
const COUNT_BOUND = 10000; // tenants counted exactly, at most (then one more)
const TENANT_FIELDS = `uid name createdAt deletedAt stats { ${TENANT_STATS} }`;

const TENANTS = `query Tenants($name: String, $uid: String!, $exact: Boolean!, $first: Int,
    $after: String, $last: Int, $before: String) {
  tenants(filter: {nameContains: $name}, first: $first, after: $after, last: $last,
          before: $before) {
    totalCount
    edges { node { ${TENANT_FIELDS} } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
  exact: tenants(filter: {uid: $uid}, first: 1) @include(if: $exact) {
    edges { node { ${TENANT_FIELDS} } }
  }
}`;

const ITEMS = 10; // configs, waiting and failed deliveries a tenant's page shows
const TENANT = `query Tenant($uid: String!) {
  tenant(uid: $uid) {
    uid name metadata createdAt updatedAt deletedAt
    limits { maxConfigs eventsPerSecond deliveriesPerSecond }
    stats { ${TENANT_STATS} }
  }
  configs(filter: {tenant: $uid}, first: ${ITEMS}) {
    totalCount totalCountIsExact
    edges { node { id name endpoint active
                   health { state consecutiveFailures lastFailure lastFailureAt }
                   recentAttempts(hours: 24) { attempts successRate } } }
  }
  backlog: deliveries(filter: {tenant: $uid, status: [PENDING]}, first: ${ITEMS},
                      orderBy: NEXT_ATTEMPT_AT) {
    totalCount totalCountIsExact
    edges { node { id eventType configId configName attemptCount nextAttemptAt lastStatusCode
                   heldBy { by } } }
  }
  failing: deliveries(filter: {tenant: $uid, status: [FAILED, PENDING]}, first: ${ITEMS}) {
    edges { node { id status configId configName lastStatusCode lastError updatedAt } }
  }
  attemptHistory(hours: 24, bucketMinutes: 60, tenant: $uid) {
    since bucketSeconds complete
    buckets { start attempts succeeded outcomes { outcome count } }
  }
}`;

function tenantHref(uid) {
  return `#/tenants/${encodeURIComponent(uid)}`;
}

/** The address of the list with `changes` made to its query. */
function listLink(query, changes) {
  return listAddress("#/tenants", query, changes);
}

function tenantRow(tenant) {
  const stats = tenant.stats;
  return h("tr", { "data-uid": tenant.uid },
    h("td", {}, h("a", { href: tenantHref(tenant.uid) }, tenant.name),
      tenant.deletedAt ? [" ", badge("cancelled", "deleted")] : null,
      h("div", { class: "muted" }, tenant.uid)),
    h("td", { class: "num" }, bounded(stats.queueDepth)),
    h("td", {}, stats.oldestDueAgeSeconds === null ? "—" : duration(stats.oldestDueAgeSeconds)),
    h("td", { class: "num" }, stats.failed ? h("a", { class: "bad",
      href: withTenant("#/deliveries?status=FAILED", tenant.uid) }, bounded(stats.failed))
      : "0"),
    h("td", { class: "num" }, number(stats.attemptsLastHour)),
    h("td", { class: "num" }, stats.failureRatioLastHour
      ? h("span", { class: "bad" }, percent(stats.failureRatioLastHour))
      : percent(stats.failureRatioLastHour)),
    h("td", {}, relative(tenant.createdAt)));
}

export async function tenantsPage({ query }) {
  const show = startPage();
  const tools = () => h("div", { class: "toolbar", role: "search" }, searchBox(
    { id: "tenant-search", label: "Search tenants by name or uid",
      placeholder: "search name or uid…", value: query.get("search") || "" },
    (search) => { location.hash = listLink(query, { search }); }));
  const typing = document.activeElement?.id === "tenant-search";
  const keepTyping = () => { // the list follows the typing; the cursor stays in the box
    if (!typing) return;
    const input = document.getElementById("tenant-search");
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  };
  show(heading("Tenants"), tools(), loading());
  keepTyping();
  const search = query.get("search") || null;
  const backwards = Boolean(query.get("cursor_before"));
  const first = !backwards && !query.get("cursor_after");
  let data;
  try {
    data = await gql(TENANTS, { name: search, uid: search || "", exact: Boolean(search) && first,
      first: backwards ? null : PAGE, after: query.get("cursor_after"),
      last: backwards ? PAGE : null, before: query.get("cursor_before") });
  } catch (error) {
    show(heading("Tenants"), tools(), failure(error));
    keepTyping();
    return;
  }
  const listed = data.tenants.edges.map(({ node }) => node);
  // A search names a tenant by its uid as well as by a piece of its name: the first page
  // shows the tenant of that uid first.
  const exact = (data.exact?.edges || []).map(({ node }) => node)
    .filter((tenant) => !listed.some((t) => t.uid === tenant.uid));
  const tenants = [...exact, ...listed];
  rememberTenants(tenants);
  const page = data.tenants.pageInfo;
  const count = data.tenants.totalCount + exact.length;
  const total = `${count > COUNT_BOUND ? `more than ${number(COUNT_BOUND)}` : number(count)} ` +
    (search ? "matching" : "tenants");
  show(
    heading("Tenants", h("span", { class: "muted", id: "total" }, total)),
    tools(),
    table(["Tenant", "Queue depth", "Oldest sendable waits", "Failed deliveries",
      "Attempts (1 h)", "Failed attempts (1 h)", "Created"], tenants.map(tenantRow)),
    h("nav", { class: "pager", "aria-label": "Pages" },
      page.hasPreviousPage ? h("a", { class: "button secondary", rel: "prev",
        href: listLink(query, { cursor_before: page.startCursor }) }, "← Previous") : null,
      page.hasNextPage ? h("a", { class: "button secondary", rel: "next",
        href: listLink(query, { cursor_after: page.endCursor }) }, "Next →") : null),
    h("p", { class: "muted" }, "Each tenant's deliveries are counted up to 10,000."));
  keepTyping();
}

function counted(connection) {
  return `${connection.totalCountIsExact ? "" : "about "}${number(connection.totalCount)}`;
}

function limitsText(limits) {
  const parts = [
    limits.maxConfigs === null ? null : `${number(limits.maxConfigs)} configs`,
    limits.eventsPerSecond === null ? null : `${limits.eventsPerSecond} events/s`,
    limits.deliveriesPerSecond === null ? null : `${limits.deliveriesPerSecond} deliveries/s`,
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "none";
}

function configsTable(configs) {
  return table(["Name", "Endpoint", "State", "Health", "Last failure", "Attempts (24 h)",
    "Success rate"], configs.edges.map(({ node }) => h("tr", {},
    h("td", {}, configLink(node)),
    h("td", { class: "wrap" }, node.endpoint),
    h("td", {}, badge(node.active ? "active" : "inactive")),
    h("td", {}, healthBadge(node.health)),
    h("td", { class: "wrap" }, lastFailure(node.health)),
    h("td", { class: "num" }, number(node.recentAttempts.attempts)),
    h("td", { class: "num" }, successRate(node.recentAttempts.successRate, node.health)))));
}

function backlogTable(backlog) {
  return table(["Delivery", "Event type", "Config", "Attempts", "Last code", "Next attempt"],
    backlog.edges.map(({ node }) => h("tr", {},
      h("td", {}, h("a", { href: `#/deliveries/${node.id}` }, node.id)),
      h("td", {}, node.eventType),
      h("td", {}, configLink({ id: node.configId, name: node.configName })),
      h("td", { class: "num" }, number(node.attemptCount)),
      h("td", { class: "num" }, node.lastStatusCode ?? "—"),
      h("td", {}, node.heldBy ? h("span", { class: "held" }, "held") : relative(node.nextAttemptAt)))),
    "Soonest first");
}

export async function tenantPage({ params: [uid] }) {
  const show = startPage();
  show(heading(`Tenant ${uid}`), loading());
  let data;
  try {
    data = await gql(TENANT, { uid });
  } catch (error) {
    show(heading(`Tenant ${uid}`), failure(error),
      h("p", {}, h("a", { href: "#/tenants" }, "Back to the tenants")));
    return;
  }
  const { tenant, configs, backlog, failing, attemptHistory: history } = data;
  rememberTenants([tenant]);
  rememberConfigs(configs.edges.map(({ node }) => node));
  const narrowed = (href) => withTenant(href, tenant.uid);
  show(
    heading(tenant.name, tenant.deletedAt ? badge("cancelled", "deleted") : null,
      h("span", { class: "muted" }, tenant.uid)),
    h("dl", { class: "facts" },
      h("dt", {}, "Uid"), h("dd", {}, h("code", {}, tenant.uid)),
      h("dt", {}, "Name"), h("dd", {}, tenant.name),
      h("dt", {}, "Limits"), h("dd", {}, limitsText(tenant.limits)),
      h("dt", {}, "Metadata"), h("dd", { class: "wrap" }, h("code", {},
        JSON.stringify(tenant.metadata))),
      h("dt", {}, "Created"), h("dd", {}, time(tenant.createdAt)),
      h("dt", {}, "Updated"), h("dd", {}, time(tenant.updatedAt)),
      tenant.deletedAt ? [h("dt", {}, "Deleted"), h("dd", {}, time(tenant.deletedAt))] : null),
    h("p", {}, h("a", { href: narrowed("#/") }, "Its overview"), " · ",
      h("a", { href: narrowed("#/configs") }, "All its configs"), " · ",
      h("a", { href: narrowed("#/deliveries") }, "All its deliveries")),
    tenantCards(tenant.stats, narrowed),
    h("section", {}, h("h2", {}, "Attempts, last 24 hours"), attemptChart(history)),
    h("section", { "aria-label": "Its configs" },
      h("h2", {}, `Configs (${counted(configs)})`),
      configsTable(configs),
      configs.totalCount > configs.edges.length
        ? h("p", {}, h("a", { href: narrowed("#/configs") }, `All ${counted(configs)} configs`))
        : null),
    h("section", { "aria-label": "Its backlog" },
      h("h2", {}, `Backlog (${counted(backlog)} pending)`),
      backlog.edges.length ? backlogTable(backlog)
        : h("p", { class: "muted" }, "Nothing waits to be sent."),
      backlog.totalCount > backlog.edges.length ? h("p", {}, h("a", {
        href: narrowed("#/deliveries?status=PENDING&order=NEXT_ATTEMPT_AT") },
      "All its pending deliveries, soonest first")) : null),
    h("section", { "aria-label": "Its recent failures" },
      h("h2", {}, "Recent failures"),
      recentFailures(failing, { withConfig: true }),
      h("p", {}, h("a", { href: narrowed("#/deliveries?status=FAILED") },
        "All its failed deliveries (replay them in bulk there)"))));
}
