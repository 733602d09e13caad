// The tenant's endpoints: the list with each one's state and recent success, and adding one
// (its secret shown once, with how to verify the requests).

import { failingNow } from "/dashboard/health.js";
import { failure, h, heading, loading, percent, startPage, table } from "/dashboard/ui.js";
import { eventTypes } from "./catalog.js";
import { endpointPage } from "./endpoint.js";
import { endpointForm } from "./form.js";
import { secretPanel } from "./secret.js";
import { call, can } from "./session.js";

const ENDPOINTS = `{ configs(first: 100) { totalCount edges { node {
  id name endpoint eventTypes active
  health { state consecutiveFailures }
  recentAttempts(hours: 24) { attempts successRate } } } } }`;

const CREATE = `mutation Create($input: CreateConfigInput!) {
  createConfig(input: $input) { secret config { id } } }`;

/** The state of an endpoint in a word or two. */
export function stateWords(config) {
  if (!config.active) return ["disabled", "Disabled"];
  const health = config.health;
  if (health.state === "PAUSED") return ["paused", "Paused"];
  if (health.state === "OPEN" || health.state === "HALF_OPEN") return ["open", "Failing, held"];
  if (failingNow(health)) return ["failing", "Failing"];
  return ["healthy", "Working"];
}

function row(config) {
  const [kind, words] = stateWords(config);
  const recent = config.recentAttempts;
  return h("tr", { dataset: { id: config.id } },
    h("td", {}, h("button", { type: "button", class: "link", onclick: () => endpointPage(config.id) },
      h("span", { dir: "auto" }, config.name || config.endpoint)),
    config.name ? h("div", { class: "muted wrap", dir: "auto" }, config.endpoint) : null),
    h("td", { class: "wrap", dir: "auto" }, config.eventTypes.join(", ")),
    h("td", {}, h("span", { class: `badge ${kind}` }, words)),
    h("td", {}, recent.attempts ? `${percent(recent.successRate)} of ${recent.attempts}` : "—"));
}

export async function endpointsPage() {
  const show = startPage();
  show(heading("Endpoints"), loading());
  let configs;
  try {
    configs = (await call(ENDPOINTS)).configs.edges.map((edge) => edge.node);
  } catch (error) {
    show(heading("Endpoints"), failure(error));
    return;
  }
  const add = can("MANAGE_ENDPOINTS")
    ? h("button", { type: "button", id: "add-endpoint", onclick: addEndpointPage }, "Add endpoint")
    : null;
  show(heading("Endpoints", add),
    configs.length
      ? table(["Endpoint", "Event types", "State", "Success, 24 h"], configs.map(row))
      : h("p", { class: "muted empty" }, "No endpoint yet.",
        add ? " Add one to start receiving webhooks." : ""));
}

export async function addEndpointPage() {
  const show = startPage();
  show(heading("Add an endpoint"), loading());
  let types;
  try {
    types = await eventTypes();
  } catch (error) {
    show(heading("Add an endpoint"), failure(error));
    return;
  }
  const form = endpointForm({
    types, submitLabel: "Add endpoint", cancel: endpointsPage,
    save: async (fields) => {
      const created = (await call(CREATE, { input: fields })).createConfig;
      startPage()(heading("Endpoint added"),
        secretPanel(created.secret, "Its signing secret",
          () => endpointPage(created.config.id)));
    },
  });
  show(heading("Add an endpoint"), form);
  form.querySelector("#endpoint-url").focus();
}
