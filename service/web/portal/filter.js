// The content filter of the endpoint form: a match on the payload as JSON (MongoDB's query
// operators), and "Test against this example", which asks the service whether the filter lets
// an example of the catalog through and why (the service judges it by the code its fan-out
// runs, so the answer here is the answer there).

import { describe } from "/dashboard/api.js";
import { h } from "/dashboard/ui.js";
import { call } from "./session.js";

const TEST = `query Test($filter: JSON!, $payload: JSON!) {
  testFilter(filter: $filter, payload: $payload) { matched reason } }`;

/** Read the filter typed in `text`: null when empty; throw an Error saying what is wrong. */
export function readFilter(text) {
  if (!text.trim()) return null;
  let filter;
  try {
    filter = JSON.parse(text);
  } catch (error) {
    throw new Error(`The filter is not JSON: ${error.message}`);
  }
  if (filter === null || typeof filter !== "object" || Array.isArray(filter)) {
    throw new Error('The filter is a JSON object, such as {"amount": {"$gte": 100}}.');
  }
  return filter;
}

/** The catalog's examples, each with the type it is of, as options of a list. */
function exampleOptions(types) {
  const found = [];
  for (const type of types) {
    const examples = Array.isArray(type.examples) ? type.examples : [];
    examples.forEach((payload, index) => found.push({
      label: examples.length > 1 ? `${type.name}, example ${index + 1}` : type.name,
      payload }));
  }
  return found;
}

/** Return the filter's part of the form and `value()`, the filter to save (null: none). */
export function filterEditor(types, current = null) {
  const text = h("textarea", { id: "endpoint-filter", name: "filter", rows: 5,
    spellcheck: "false", autocomplete: "off", dir: "ltr",
    placeholder: '{"amount": {"$gte": 100}}', "aria-describedby": "filter-hint" },
  current ? JSON.stringify(current, null, 2) : "");
  const examples = exampleOptions(types);
  const chooser = h("select", { id: "filter-example", "aria-label": "Example to test against" },
    examples.map((example, index) => h("option", { value: String(index) }, example.label)));
  const result = h("p", { id: "filter-result", class: "filter-result", role: "status",
    "aria-live": "polite", hidden: true });
  const preview = h("pre", { id: "filter-example-payload", class: "filter-example", dir: "auto" });

  function showExample() {
    const example = examples[Number(chooser.value)];
    preview.textContent = example ? JSON.stringify(example.payload, null, 2) : "";
  }

  function say(kind, ...words) {
    result.className = `filter-result ${kind}`;
    result.replaceChildren(...words);
    result.hidden = false;
  }

  const test = h("button", { type: "button", id: "filter-test", class: "secondary",
    onclick: async () => {
      let filter;
      try {
        filter = readFilter(text.value) || {};
      } catch (error) {
        say("error", error.message);
        return;
      }
      const example = examples[Number(chooser.value)];
      test.disabled = true;
      try {
        const verdict = (await call(TEST, { filter, payload: example.payload })).testFilter;
        say(verdict.matched ? "matched" : "not-matched",
          h("strong", {}, verdict.matched ? "Matched: " : "Not matched: "),
          h("span", { dir: "auto" }, verdict.reason));
      } catch (error) {
        say("error", describe(error));
      } finally {
        test.disabled = false;
      }
    } }, "Test against this example");
  chooser.addEventListener("change", () => {
    showExample();
    result.hidden = true;
  });
  showExample();

  const element = h("fieldset", { id: "content-filter" }, h("legend", {}, "Filter (optional)"),
    h("label", { for: "endpoint-filter" }, "Deliver only events whose payload matches"), text,
    h("p", { class: "muted", id: "filter-hint" }, "JSON with MongoDB's query operators on ",
      "the payload's dotted paths: ", h("code", {}, "$eq $ne $gt $gte $lt $lte $in $nin "
        + "$exists $regex $and $or $not"), ", e.g. ",
      h("code", {}, '{"customer.country": {"$in": ["FR", "DE"]}}'),
      ". Empty: every event of the chosen types."),
    examples.length
      ? h("div", { class: "filter-test" }, chooser, test, result,
        h("details", {}, h("summary", {}, "The example"), preview))
      : h("p", { class: "muted" }, "The catalog has no example to test against."));
  return { element, value: () => readFilter(text.value) };
}
