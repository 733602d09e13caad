// A type-ahead picker of configs: type a piece of a name or an endpoint, pick from the few
// the API finds; picked configs show by name (the id on hover) and travel as hidden inputs.
// It never lists every config: a platform may have a hundred thousand.

import { describe, gql } from "./api.js";
import { h } from "./ui.js";

const SEARCH = `query PickConfigs($filter: ConfigFilter, $first: Int) {
  configs(filter: $filter, first: $first) { edges { node { id name endpoint } } }
}`;
const SUGGESTIONS = 8;
const DELAY_MS = 150; // typing pauses this long before the API is asked

// Configs already seen, by id: their names stay known across searches and pages.
const known = new Map();

/** Remember the names of configs a page already loaded ({id, name} each). */
export function rememberConfigs(configs) {
  for (const config of configs) if (config && config.id) known.set(config.id, config);
}

async function lookUp(ids) {
  const missing = ids.filter((id) => !known.has(id));
  await Promise.all(missing.map(async (id) => {
    try {
      const data = await gql(SEARCH, { filter: { search: id }, first: 1 });
      const found = data.configs.edges.map((edge) => edge.node).find((c) => c.id === id);
      known.set(id, found || { id, name: null });
    } catch {
      known.set(id, { id, name: null });
    }
  }));
}

/** Return a picker element for the form field `name`, with `selected` ids picked. */
export function configPicker({ id, name, selected = [], label = "Configs" }) {
  const picked = new Set(selected);
  const chips = h("ul", { class: "chips", "aria-label": `${label} picked` });
  const hidden = h("span", { hidden: true });
  const list = h("ul", { class: "suggestions", role: "listbox", id: `${id}-options`,
    hidden: true });
  const status = h("span", { class: "muted picker-status", role: "status" });
  const input = h("input", { id, type: "search", autocomplete: "off", role: "combobox",
    "aria-autocomplete": "list", "aria-controls": `${id}-options`, "aria-expanded": "false",
    placeholder: "type a name or endpoint…" });
  let timer;
  let asked = 0;

  function draw() {
    chips.replaceChildren(...[...picked].map((configId) => {
      const config = known.get(configId) || { id: configId, name: null };
      return h("li", { class: "chip", title: configId },
        config.name || configId,
        h("button", { type: "button", class: "link", "aria-label": `Remove ${config.name
          || configId}`, onclick: () => { picked.delete(configId); draw(); } }, "×"));
    }));
    hidden.replaceChildren(...[...picked].map((configId) =>
      h("input", { type: "hidden", name, value: configId })));
  }

  function close() {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
  }

  function choose(config) {
    picked.add(config.id);
    known.set(config.id, config);
    input.value = "";
    close();
    draw();
    input.focus();
  }

  async function search() {
    const text = input.value.trim();
    const mine = ++asked;
    if (!text) {
      close();
      status.textContent = "";
      return;
    }
    let found;
    try {
      const data = await gql(SEARCH, { filter: { search: text }, first: SUGGESTIONS });
      found = data.configs.edges.map((edge) => edge.node);
    } catch (error) {
      if (mine === asked) status.textContent = describe(error);
      return;
    }
    if (mine !== asked) return; // a newer search is under way
    rememberConfigs(found);
    status.textContent = found.length ? "" : "no config matches";
    list.replaceChildren(...found.map((config) => h("li", { role: "option",
      title: config.id, tabindex: "-1", "data-id": config.id,
      onmousedown: (event) => { event.preventDefault(); choose(config); },
      onkeydown: (event) => { if (event.key === "Enter") { event.preventDefault();
        choose(config); } } },
    h("strong", {}, config.name || config.id), " ", h("span", { class: "muted" },
      config.endpoint))));
    list.hidden = !found.length;
    input.setAttribute("aria-expanded", String(!list.hidden));
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(search, DELAY_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
    if (event.key === "ArrowDown" && !list.hidden) {
      event.preventDefault();
      list.querySelector("li")?.focus();
    }
    if (event.key === "Enter") {
      event.preventDefault(); // Enter picks; it never submits the form half-typed
      const first = list.hidden ? null : list.querySelector("li");
      if (first) first.dispatchEvent(new MouseEvent("mousedown"));
    }
  });
  input.addEventListener("blur", () => setTimeout(close, 150));
  list.addEventListener("keydown", (event) => {
    const items = [...list.querySelectorAll("li")];
    const at = items.indexOf(document.activeElement);
    if (event.key === "ArrowDown") items[Math.min(items.length - 1, at + 1)]?.focus();
    if (event.key === "ArrowUp") (at <= 0 ? input : items[at - 1]).focus();
    if (event.key === "Escape") { close(); input.focus(); }
  });

  lookUp([...picked]).then(draw);
  draw();
  return h("div", { class: "picker" }, chips, input, list, status, hidden);
}
