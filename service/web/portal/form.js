// The endpoint form, to add an endpoint or change one: its URL (checked here, and by the
// service), its name, its event types and its content filter.

import { describe } from "/dashboard/api.js";
import { h } from "/dashboard/ui.js";
import { filterEditor } from "./filter.js";
import { eventTypePicker } from "./picker.js";

/** Say what is wrong with an endpoint URL, or null. */
export function urlProblem(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    return "Enter a full URL, such as https://example.com/webhooks.";
  }
  if (!["http:", "https:"].includes(url.protocol)) return "The URL must start with https:// or http://.";
  return null;
}

/** Return a form for `config` (null: a new one) whose submission calls `save(fields)`. */
export function endpointForm({ config = null, types, submitLabel, save, cancel }) {
  const url = h("input", { id: "endpoint-url", name: "endpoint", type: "url", required: true,
    autocomplete: "url", placeholder: "https://example.com/webhooks", value: config?.endpoint,
    "aria-describedby": "form-error" });
  const name = h("input", { id: "endpoint-name", name: "name", maxlength: 200,
    value: config?.name, dir: "auto" });
  const picker = eventTypePicker(types, config?.eventTypes || []);
  const filter = filterEditor(types, config?.filter || null);
  const problem = h("p", { class: "error", id: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", id: "endpoint-save" }, submitLabel);

  function fail(message) {
    problem.textContent = message;
    problem.hidden = false;
    submit.disabled = false;
  }

  const form = h("form", { class: "endpoint-form", novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    submit.disabled = true;
    problem.hidden = true;
    const wrong = urlProblem(url.value.trim());
    if (wrong) return fail(wrong);
    const eventTypes = picker.chosen();
    if (!eventTypes.length) return fail("Choose at least one event type or pattern.");
    let chosenFilter;
    try {
      chosenFilter = filter.value();
    } catch (error) {
      return fail(error.message);
    }
    try {
      await save({ endpoint: url.value.trim(), name: name.value.trim() || null, eventTypes,
        filter: chosenFilter });
    } catch (error) {
      fail(describe(error));
    }
  } },
  h("label", { for: "endpoint-url" }, "Endpoint URL"), url,
  h("label", { for: "endpoint-name" }, "Name (optional)"), name,
  picker.element,
  filter.element,
  problem,
  h("div", { class: "actions" }, submit,
    cancel ? h("button", { type: "button", class: "secondary", onclick: cancel }, "Cancel")
      : null));
  return form;
}
