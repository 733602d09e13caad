// Overview: the configs that need a person first, then counts by status, queue depth, backlog
// age, rejected messages and the attempts chart. Narrowed to one tenant (a platform token's
// choice, or a tenant token's own), the counts are the tenant's and there are no rejected
// messages: those are the platform's.

import { gql, viewer } from "../api.js";
import { healthBadge, lastFailure } from "../health.js";
import { TENANT_BOUND, TENANT_STATS, card, tenantCards } from "../counts.js";
import { narrowedTo, withTenant } from "../tenancy.js";
import {
  attemptChart, badge, duration, failure, h, heading, loading, number, relative, startPage, table,
} from "../ui.js";

const HISTORY = `since bucketSeconds complete
  buckets { start attempts succeeded outcomes { outcome count } }`;
const ATTENTION = `config { id name endpoint health { state consecutiveFailures lastFailure
                                                     lastFailureAt } }
  state failures attempts reason unanswered unansweredSince`;

const OVERVIEW = `query Overview {
  stats { byStatus { status count } queueDepth oldestDueAgeSeconds rejectedEvents }
  attemptHistory(hours: 24, bucketMinutes: 60) { ${HISTORY} }
  configsNeedingAttention(hours: 1, first: 10) { ${ATTENTION} }
}`;

const TENANT_OVERVIEW = `query TenantOverview($tenant: String!) {
  tenant(uid: $tenant) { uid name stats { ${TENANT_STATS} } }
  attemptHistory(hours: 24, bucketMinutes: 60, tenant: $tenant) { ${HISTORY} }
  configsNeedingAttention(hours: 1, first: 10, tenant: $tenant) { ${ATTENTION} }
}`;

function attentionSection(attention) {
  return h("section", { "aria-label": "Configs that need a person" },
    h("h2", {}, "Needs a look"),
    attention.length ? table(["Config", "Health", "Failed (1 h)", "Attempts (1 h)",
      "Last failure"],
    attention.map((a) => h("tr", {},
      h("td", {}, h("a", { href: `#/configs/${encodeURIComponent(a.config.id)}`,
        title: a.config.id }, a.config.name || a.config.id)),
      h("td", {}, healthBadge(a.config.health), a.reason ? h("span", { class: "muted" }, ` ${a.reason}`)
        : null, a.unanswered ? h("div", { class: "bad unanswered" },
        `${number(a.unanswered)} without an answer yet, the oldest claimed `,
        relative(a.unansweredSince)) : null),
      h("td", { class: "num" }, number(a.failures)),
      h("td", { class: "num" }, number(a.attempts)),
      h("td", { class: "wrap" }, lastFailure(a.config.health)))))
      : h("p", { class: "muted", id: "all-well" }, "No open circuit, no failed attempt in " +
        "the last hour, no attempt waiting over 10 s for its answer, nothing paused."));
}

function chartSection(history) {
  return h("section", {}, h("h2", {}, "Attempts, last 24 hours"), attemptChart(history));
}

export async function overviewPage({ query }) {
  const tenant = narrowedTo(query) || viewer.tenantUid;
  const show = startPage();
  show(heading("Overview"), loading());
  let data;
  try {
    data = await gql(tenant ? TENANT_OVERVIEW : OVERVIEW, tenant ? { tenant } : {});
  } catch (error) {
    show(heading("Overview"), failure(error));
    return;
  }
  const { attemptHistory: history, configsNeedingAttention: attention } = data;
  if (tenant) {
    const own = Boolean(viewer.tenantUid);
    show(
      heading(own ? "Overview" : `Overview: ${data.tenant.name}`,
        own ? null : h("span", { class: "muted" }, data.tenant.uid)),
      attentionSection(attention),
      tenantCards(data.tenant.stats, (href) => withTenant(href, own ? null : tenant)),
      chartSection(history),
      h("p", { class: "muted" }, `Counts stop at ${number(TENANT_BOUND)}. `,
        badge("failed"), " deliveries need a look; replay them from their page or in bulk."));
    return;
  }
  const { stats } = data;
  const cards = stats.byStatus.map((s) => card(
    s.status.toLowerCase(), number(s.count), `#/deliveries?status=${s.status}`));
  const due = stats.oldestDueAgeSeconds;
  show(
    heading("Overview"),
    attentionSection(attention),
    h("section", { class: "stats", "aria-label": "Deliveries by status" }, cards),
    h("section", { class: "stats", "aria-label": "Queue" },
      card("queue depth", number(stats.queueDepth),
        "#/deliveries?status=PENDING&order=NEXT_ATTEMPT_AT"),
      card("oldest sendable waits", due === null ? "nothing to send" : duration(due)),
      card("rejected broker messages", number(stats.rejectedEvents), "#/rejected")),
    chartSection(history),
    h("p", { class: "muted" }, "Counts stop at 1,000,000. ",
      badge("failed"), " deliveries need a look; replay them from their page or in bulk."));
}
