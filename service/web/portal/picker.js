// The event-type picker of the endpoint form: the catalog's types by group, each with its
// description, schema and examples, a search box, and patterns (wildcards) typed by hand.

import { h } from "/dashboard/ui.js";
import { grant } from "./session.js";

function typeOption(type, chosen) {
  const id = `type-${type.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const examples = Array.isArray(type.examples) ? type.examples : [];
  return h("li", { class: "type-option", dataset: { name: type.name } },
    h("input", { type: "checkbox", id, name: "eventType", value: type.name,
      checked: chosen.has(type.name) }),
    h("label", { for: id }, h("code", { dir: "auto" }, type.name),
      type.deprecated ? h("span", { class: "badge deprecated" }, "deprecated") : null),
    type.description ? h("p", { class: "muted", dir: "auto" }, type.description) : null,
    type.schema || examples.length ? h("details", {},
      h("summary", {}, "Schema and examples"),
      type.schema ? [h("h4", {}, "Schema"),
        h("pre", { dir: "auto" }, JSON.stringify(type.schema, null, 2))] : null,
      examples.map((example, index) => [h("h4", {}, `Example ${index + 1}`),
        h("pre", { dir: "auto" }, JSON.stringify(example, null, 2))])) : null);
}

/** Return the picker and `chosen()`, the subscriptions picked (types, then patterns). */
export function eventTypePicker(types, current = []) {
  const known = new Set(types.map((type) => type.name));
  const chosenTypes = new Set(current.filter((name) => known.has(name)));
  const groups = new Map();
  for (const type of types) {
    const group = type.groupName || "Other";
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(type);
  }
  const list = h("div", { class: "type-groups" }, [...groups].map(([group, members]) =>
    h("div", { class: "type-group" }, h("h3", { dir: "auto" }, group),
      h("ul", {}, members.map((type) => typeOption(type, chosenTypes))))));
  const search = h("input", { type: "search", id: "type-search", placeholder: "Search types",
    "aria-label": "Search event types", oninput: () => {
      const words = search.value.trim().toLowerCase();
      for (const option of list.querySelectorAll(".type-option")) {
        option.hidden = Boolean(words) && !option.textContent.toLowerCase().includes(words);
      }
    } });
  const patterns = h("input", { id: "endpoint-patterns", name: "patterns",
    value: current.filter((name) => !known.has(name)).join(", "),
    "aria-describedby": "patterns-hint" });
  const limits = grant.eventTypes ? ` You may subscribe to: ${grant.eventTypes.join(", ")}.` : "";
  const fieldset = h("fieldset", { id: "event-types" }, h("legend", {}, "Event types"),
    types.length ? [search, list] : h("p", { class: "muted" }, "The catalog lists no types."),
    h("label", { for: "endpoint-patterns" }, "Patterns (wildcards)"), patterns,
    h("p", { class: "muted", id: "patterns-hint" }, "Separated by commas: ",
      h("code", {}, "invoice.*"), " for every invoice event, ", h("code", {}, "*"),
      " for all.", limits));
  function chosen() {
    const picked = [...fieldset.querySelectorAll("input[name=eventType]:checked")]
      .map((box) => box.value);
    const typed = patterns.value.split(",").map((part) => part.trim()).filter(Boolean);
    return [...new Set([...picked, ...typed])];
  }
  return { element: fieldset, chosen };
}
