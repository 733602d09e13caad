// Rejected broker messages: reason, where they came from, and their raw bytes.

import { gql } from "../api.js";
import { failure, h, heading, loading, startPage, table, time } from "../ui.js";

const REJECTED = `query Rejected($after: String) {
  rejectedEvents(first: 50, after: $after) {
    totalCount
    edges { node { id topic partition offset reason raw createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}`;

function bytesOf(raw) {
  if (raw === null) return h("span", { class: "muted" }, "none");
  const text = atob(raw);
  const printable = Array.from(text, (c) => (c >= " " && c <= "~") || c === "\n" ? c : "·")
    .join("");
  return h("details", {},
    h("summary", {}, `${text.length} bytes`),
    h("pre", { class: "raw" }, printable),
    h("p", { class: "muted" }, "base64: ", h("code", {}, raw)));
}

export async function rejectedPage({ query }) {
  const show = startPage();
  show(heading("Rejected broker messages"), loading());
  let connection;
  try {
    connection = (await gql(REJECTED, { after: query.get("after") })).rejectedEvents;
  } catch (error) {
    show(heading("Rejected broker messages"), failure(error));
    return;
  }
  const page = connection.pageInfo;
  show(
    heading("Rejected broker messages",
      h("span", { class: "muted" }, `${connection.totalCount} in all`)),
    h("p", { class: "muted" }, "Messages that could not become events (not JSON, no type, too " +
      "large). They were committed on the broker so that consumption goes on."),
    table(["Received", "Topic / partition / offset", "Reason", "Raw bytes"],
      connection.edges.map(({ node }) => h("tr", {},
        h("td", {}, time(node.createdAt)),
        h("td", {}, `${node.topic} / ${node.partition} / ${node.offset}`),
        h("td", {}, node.reason),
        h("td", {}, bytesOf(node.raw))))),
    h("nav", { class: "pager", "aria-label": "Pages" },
      query.get("after") ? h("a", { class: "button secondary", href: "#/rejected" }, "Newest")
        : null,
      page.hasNextPage ? h("a", { class: "button secondary",
        href: `#/rejected?after=${encodeURIComponent(page.endCursor)}` }, "Older") : null));
}
