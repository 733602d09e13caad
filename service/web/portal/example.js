// Sending an example event: one of the catalog's examples of a type, published to this
// tenant (every endpoint subscribed to the type receives it).

import { describe } from "/dashboard/api.js";
import { h, notify } from "/dashboard/ui.js";
import { eventTypes, matches } from "./catalog.js";
import { call } from "./session.js";

const PUBLISH = `mutation Send($input: PublishEventInput!) {
  publishEvent(input: $input) { eventId deliveryIds } }`;

export function examplePanel(config) {
  const typeSelect = h("select", { id: "example-type" });
  const exampleSelect = h("select", { id: "example-choice" });
  const preview = h("pre", { id: "example-preview", dir: "auto" });
  const send = h("button", { type: "button", id: "example-send", disabled: true });
  const section = h("section", { class: "example", "aria-label": "Send an example" },
    h("h2", {}, "Send an example"),
    h("p", { class: "muted" }, "Publishes one of the catalog's examples to your account: this ",
      "endpoint and every other one subscribed to its type receive it."),
    h("label", { for: "example-type" }, "Event type"), typeSelect,
    h("label", { for: "example-choice" }, "Example"), exampleSelect, preview,
    h("div", { class: "actions" }, send));
  let types = [];

  function showExample() {
    const type = types.find((t) => t.name === typeSelect.value);
    const example = type ? type.examples[Number(exampleSelect.value)] : undefined;
    preview.textContent = example === undefined ? "" : JSON.stringify(example, null, 2);
    send.textContent = type ? `Send ${type.name}` : "Send";
    send.disabled = example === undefined;
  }

  function showExamples() {
    const type = types.find((t) => t.name === typeSelect.value);
    exampleSelect.replaceChildren(...(type ? type.examples : []).map((_, index) =>
      h("option", { value: index }, `Example ${index + 1}`)));
    showExample();
  }

  typeSelect.addEventListener("change", showExamples);
  exampleSelect.addEventListener("change", showExample);
  send.addEventListener("click", async () => {
    const type = types.find((t) => t.name === typeSelect.value);
    send.disabled = true;
    try {
      const sent = (await call(PUBLISH, { input: { type: type.name,
        payload: type.examples[Number(exampleSelect.value)] } })).publishEvent;
      notify(`Sent ${type.name} (event ${sent.eventId}): ${sent.deliveryIds.length} ` +
        "deliveries.");
    } catch (error) {
      notify(describe(error), "error");
    }
    send.disabled = false;
  });

  eventTypes().then((all) => {
    types = all.filter((type) => Array.isArray(type.examples) && type.examples.length);
    // The types this endpoint receives first: the example reaches it.
    const mine = (type) => config.eventTypes.some((pattern) => matches(pattern, type.name));
    types.sort((a, b) => Number(mine(b)) - Number(mine(a)) || a.name.localeCompare(b.name));
    typeSelect.replaceChildren(...types.map((type) =>
      h("option", { value: type.name, dir: "auto" }, type.name)));
    if (!types.length) section.append(h("p", { class: "muted" }, "The catalog has no example."));
    showExamples();
  }).catch((error) => section.append(h("p", { class: "error" }, describe(error))));
  return section;
}
