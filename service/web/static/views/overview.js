// Overview: counts by status, queue depth, backlog age, rejected messages, attempts chart.

import { gql } from "../api.js";
import {
  attemptChart, badge, duration, failure, h, heading, loading, number, percent, startPage, table,
} from "../ui.js";

const OVERVIEW = `query Overview {
  stats { byStatus { status count } queueDepth oldestDueAgeSeconds rejectedEvents }
  attemptHistory(hours: 24, bucketMinutes: 60) {
    since bucketSeconds complete
    buckets { start attempts succeeded outcomes { outcome count } }
    configs { configId configName attempts succeeded successRate }
  }
}`;

function card(label, value, link) {
  const body = [h("span", { class: "label" }, label), h("strong", {}, value)];
  return link ? h("a", { class: "stat", href: link }, body) : h("div", { class: "stat" }, body);
}

export async function overviewPage() {
  const show = startPage();
  show(heading("Overview"), loading());
  let data;
  try {
    data = await gql(OVERVIEW);
  } catch (error) {
    show(heading("Overview"), failure(error));
    return;
  }
  const { stats, attemptHistory: history } = data;
  const cards = stats.byStatus.map((s) => card(
    s.status.toLowerCase(), number(s.count), `#/deliveries?status=${s.status}`));
  const due = stats.oldestDueAgeSeconds;
  show(
    heading("Overview"),
    h("section", { class: "stats", "aria-label": "Deliveries by status" }, cards),
    h("section", { class: "stats", "aria-label": "Queue" },
      card("queue depth", number(stats.queueDepth),
        "#/deliveries?status=PENDING&order=NEXT_ATTEMPT_AT"),
      card("oldest due waits", due === null ? "nothing due" : duration(due)),
      card("rejected broker messages", number(stats.rejectedEvents), "#/rejected")),
    h("section", {},
      h("h2", {}, "Attempts, last 24 hours"),
      attemptChart(history)),
    h("section", {},
      h("h2", {}, "By config, last 24 hours"),
      table(["Config", "Attempts", "Succeeded", "Success rate"],
        history.configs.map((c) => h("tr", {},
          h("td", {}, h("a", { href: `#/configs/${encodeURIComponent(c.configId)}` },
            c.configName || c.configId)),
          h("td", { class: "num" }, number(c.attempts)),
          h("td", { class: "num" }, number(c.succeeded)),
          h("td", { class: "num" }, c.successRate !== null && c.successRate < 0.9
            ? h("span", { class: "bad" }, percent(c.successRate)) : percent(c.successRate)))))),
    h("p", { class: "muted" }, "Counts stop at 1,000,000. ",
      badge("failed"), " deliveries need a look; replay them from their page or in bulk."));
}
