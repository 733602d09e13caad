// One endpoint: what it receives, its health in plain words, its deliveries, and what the
// session may do with it (edit, pause or resume, delete, rotate its secret, send an example,
// recover its failures).

import { describe } from "/dashboard/api.js";
import { lastFailure } from "/dashboard/health.js";
import {
  ask, failure, h, heading, loading, notify, percent, relative, startPage, table, time,
} from "/dashboard/ui.js";
import { eventTypes } from "./catalog.js";
import { deliveryPage } from "./delivery.js";
import { endpointsPage, stateWords } from "./endpoints.js";
import { examplePanel } from "./example.js";
import { endpointForm } from "./form.js";
import { recoverPanel } from "./recover.js";
import { rotateButton } from "./rotate.js";
import { call, can } from "./session.js";
import { verificationSnippets } from "./snippets.js";

const ENDPOINT = `query Endpoint($id: ID!) {
  config(id: $id) { id name endpoint eventTypes filter filterStats { filteredOut }
    active createdAt previousSecretsExpireAt
    health { state consecutiveFailures openedAt nextProbeAt lastFailure lastFailureAt
             pausedAt reason }
    recentAttempts(hours: 24) { attempts succeeded successRate } }
  deliveries(filter: {configIds: [$id]}, first: 25) { totalCount edges { node {
    id eventType status attemptCount lastStatusCode createdAt } } } }`;

const UPDATE = `mutation Update($id: ID!, $input: UpdateConfigInput!) {
  updateConfig(id: $id, input: $input) { id } }`;
const PAUSE = `mutation Pause($id: ID!) { pauseConfig(id: $id) { message } }`;
const RESUME = `mutation Resume($id: ID!) { resumeConfig(id: $id) { message } }`;
const DELETE = `mutation Delete($id: ID!) { deleteConfig(id: $id) { cancelledDeliveries } }`;

/** Say an endpoint's health as a person would. */
function healthWords(config) {
  const health = config.health;
  if (!config.active) return "Disabled: nothing is sent to it.";
  if (health.state === "PAUSED") {
    return "Paused: new deliveries wait and are sent once it is resumed.";
  }
  if (health.state === "OPEN") {
    return ["Held after repeated failures: nothing is sent until a test delivery, ",
      relative(health.nextProbeAt), ", succeeds."];
  }
  if (health.state === "HALF_OPEN") return "Testing: one delivery is on its way to check it works again.";
  if (health.consecutiveFailures > 0) {
    return `Failing: the last ${health.consecutiveFailures} attempts failed; they are retried.`;
  }
  return "Working: the last attempts succeeded.";
}

function deliveryRows(deliveries) {
  return deliveries.map((d) => h("tr", { dataset: { id: d.id } },
    h("td", {}, h("button", { type: "button", class: "link", onclick: () => deliveryPage(d.id) },
      d.id)),
    h("td", { dir: "auto" }, d.eventType),
    h("td", {}, h("span", { class: `badge ${d.status.toLowerCase()}` }, d.status.toLowerCase())),
    h("td", {}, String(d.attemptCount)),
    h("td", {}, d.lastStatusCode === null ? "—" : String(d.lastStatusCode || "no answer")),
    h("td", {}, time(d.createdAt))));
}

async function act(query, id, done) {
  try {
    await call(query, { id });
    notify(done);
  } catch (error) {
    notify(describe(error), "error");
  }
  await endpointPage(id);
}

function actions(config) {
  const buttons = [];
  if (can("MANAGE_ENDPOINTS")) {
    buttons.push(h("button", { type: "button", id: "edit-endpoint",
      onclick: () => editPage(config) }, "Edit"));
    if (config.active) {
      buttons.push(config.health.state === "PAUSED"
        ? h("button", { type: "button", id: "resume-endpoint",
          onclick: () => act(RESUME, config.id, "Resumed.") }, "Resume")
        : h("button", { type: "button", id: "pause-endpoint",
          onclick: () => act(PAUSE, config.id, "Paused.") }, "Pause"));
    }
    buttons.push(h("button", { type: "button", class: "danger", id: "delete-endpoint",
      onclick: async () => {
        if (!await ask("Delete this endpoint? Deliveries waiting for it are cancelled.",
          "Delete")) return;
        try {
          await call(DELETE, { id: config.id });
          notify("Endpoint deleted.");
          await endpointsPage();
        } catch (error) {
          notify(describe(error), "error");
        }
      } }, "Delete"));
  }
  if (can("ROTATE_SECRET")) buttons.push(rotateButton(config));
  return buttons.length ? h("div", { class: "actions" }, buttons) : null;
}

export async function endpointPage(id) {
  const show = startPage();
  const back = h("button", { type: "button", class: "link back", onclick: endpointsPage },
    "← All endpoints");
  show(back, heading("Endpoint"), loading());
  let data;
  try {
    data = await call(ENDPOINT, { id });
  } catch (error) {
    show(back, heading("Endpoint"), failure(error));
    return;
  }
  const config = data.config;
  const [kind, words] = stateWords(config);
  const recent = config.recentAttempts;
  const deliveries = data.deliveries.edges.map((edge) => edge.node);
  show(back,
    heading(h("span", { dir: "auto" }, config.name || config.endpoint),
      h("span", { class: `badge ${kind}` }, words)),
    h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", { class: "wrap", dir: "auto" }, config.endpoint),
      h("dt", {}, "Event types"), h("dd", { dir: "auto" }, config.eventTypes.join(", ")),
      config.filter ? [h("dt", {}, "Filter"), h("dd", {},
        h("pre", { id: "endpoint-filter-shown", dir: "ltr" },
          JSON.stringify(config.filter, null, 2)),
        h("p", { class: "muted", id: "filtered-out" },
          `${config.filterStats.filteredOut} events filtered out so far.`))] : null,
      h("dt", {}, "Added"), h("dd", {}, time(config.createdAt)),
      config.previousSecretsExpireAt.length ? [h("dt", {}, "Previous secret"),
        h("dd", {}, "still signs too until ", time(config.previousSecretsExpireAt[0]))] : null),
    actions(config),
    h("section", { class: "health", "aria-label": "Health" }, h("h2", {}, "Health"),
      h("p", { id: "health-words" }, healthWords(config)),
      h("dl", { class: "facts" },
        h("dt", {}, "Succeeded, last 24 h"), h("dd", { id: "success-ratio" }, recent.attempts
          ? `${percent(recent.successRate)} of ${recent.attempts} attempts` : "no attempt"),
        h("dt", {}, "Last error"), h("dd", { id: "last-error", dir: "auto" },
          lastFailure(config.health)))),
    h("section", { "aria-label": "Deliveries" },
      h("h2", {}, `Deliveries (${data.deliveries.totalCount})`),
      table(["Id", "Event type", "Status", "Attempts", "Last answer", "Created"],
        deliveryRows(deliveries))),
    can("REPLAY") ? recoverPanel(config.id) : null,
    can("SEND_EXAMPLE") ? examplePanel(config) : null,
    verificationSnippets());
}

async function editPage(config) {
  const show = startPage();
  show(heading("Edit the endpoint"), loading());
  let types;
  try {
    types = await eventTypes();
  } catch (error) {
    show(heading("Edit the endpoint"), failure(error));
    return;
  }
  show(heading("Edit the endpoint"), endpointForm({
    config, types, submitLabel: "Save", cancel: () => endpointPage(config.id),
    save: async (fields) => {
      await call(UPDATE, { id: config.id, input: fields });
      notify("Saved.", "info", { beforeLeaving: true });
      await endpointPage(config.id);
    },
  }));
}
