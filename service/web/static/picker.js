// Type-ahead pickers: type a piece of a name (an endpoint, a uid), pick from the few the API
// finds. They never list everything: a platform may have a hundred thousand configs and as
// many tenants. The configs picker keeps several, shown by name (the id on hover), that
// travel as hidden inputs; the tenant picker chooses one.

import { describe, gql } from "./api.js";
import { h } from "./ui.js";

const SEARCH = `query PickConfigs($filter: ConfigFilter, $first: Int) {
  configs(filter: $filter, first: $first) { edges { node { id name endpoint } } }
}`;
const TENANTS = `query PickTenants($text: String!, $first: Int) {
  byUid: tenants(filter: {uid: $text}, first: 1) { edges { node { uid name } } }
  byName: tenants(filter: {nameContains: $text}, first: $first) { edges { node { uid name } } }
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

/** Return a search box with its list of suggestions (a combobox): `find(text)` resolves to
 * the items the typed text finds, `option(item)` draws one, `choose(item)` takes one. */
function typeAhead({ id, placeholder, find, option, choose, nothing }) {
  const list = h("ul", { class: "suggestions", role: "listbox", id: `${id}-options`,
    hidden: true });
  const status = h("span", { class: "muted picker-status", role: "status" });
  const input = h("input", { id, type: "search", autocomplete: "off", role: "combobox",
    "aria-autocomplete": "list", "aria-controls": `${id}-options`, "aria-expanded": "false",
    placeholder });
  let timer;
  let asked = 0;

  function close() {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
  }

  function pick(item) {
    input.value = "";
    close();
    choose(item);
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
      found = await find(text);
    } catch (error) {
      if (mine === asked) status.textContent = describe(error);
      return;
    }
    if (mine !== asked) return; // a newer search is under way
    status.textContent = found.length ? "" : nothing;
    list.replaceChildren(...found.map((item) => h("li", { role: "option", tabindex: "-1",
      onmousedown: (event) => { event.preventDefault(); pick(item); },
      onkeydown: (event) => { if (event.key === "Enter") { event.preventDefault();
        pick(item); } } }, option(item))));
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
  return { input, list, status };
}

/** Return a picker element for the form field `name`, with `selected` ids picked; with
 * `tenant` (a uid), it finds that tenant's configs only. */
export function configPicker({ id, name, selected = [], label = "Configs", tenant = null }) {
  const picked = new Set(selected);
  const chips = h("ul", { class: "chips", "aria-label": `${label} picked` });
  const hidden = h("span", { hidden: true });
  const box = typeAhead({
    id, placeholder: "type a name or endpoint…", nothing: "no config matches",
    find: async (text) => {
      const filter = tenant ? { search: text, tenant } : { search: text };
      const found = (await gql(SEARCH, { filter, first: SUGGESTIONS })).configs.edges
        .map((edge) => edge.node);
      rememberConfigs(found);
      return found;
    },
    option: (config) => h("span", { title: config.id, "data-id": config.id },
      h("strong", {}, config.name || config.id), " ",
      h("span", { class: "muted" }, config.endpoint)),
    choose: (config) => {
      picked.add(config.id);
      known.set(config.id, config);
      draw();
      box.input.focus();
    },
  });

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

  lookUp([...picked]).then(draw);
  draw();
  return h("div", { class: "picker" }, chips, box.input, box.list, box.status, hidden);
}

/** Return the tenants `text` finds: the one whose uid it is first, then those whose name holds
 * it. */
async function findTenants(text) {
  const data = await gql(TENANTS, { text, first: SUGGESTIONS });
  const exact = data.byUid.edges.map((edge) => edge.node);
  const named = data.byName.edges.map((edge) => edge.node)
    .filter((tenant) => !exact.some((e) => e.uid === tenant.uid));
  return [...exact, ...named].slice(0, SUGGESTIONS);
}

/** Return a picker of one tenant ({uid, name}, or null for every tenant): `choose(uid)` gets
 * the uid picked, or null when the one shown is removed. */
export function tenantPicker({ id, chosen, choose }) {
  const box = typeAhead({
    id, nothing: "no tenant matches",
    placeholder: chosen ? "another tenant: name or uid…" : "one tenant: type a name or uid…",
    find: findTenants,
    option: (tenant) => h("span", { "data-uid": tenant.uid },
      h("strong", {}, tenant.name), " ", h("span", { class: "muted" }, tenant.uid)),
    choose: (tenant) => choose(tenant.uid),
  });
  const shown = chosen
    ? h("span", { class: "chip", title: chosen.uid, id: `${id}-chosen` },
      chosen.name || chosen.uid, chosen.name && chosen.name !== chosen.uid
        ? h("span", { class: "muted" }, ` · ${chosen.uid}`) : null,
      h("button", { type: "button", class: "link", "aria-label": "Every tenant",
        title: "every tenant", onclick: () => choose(null) }, "×"))
    : h("span", { class: "muted", id: `${id}-chosen` }, "every tenant");
  return h("div", { class: "picker tenant-picker" },
    h("label", { for: id }, "Tenant"), shown,
    h("span", { class: "picker-box" }, box.input, box.list), box.status);
}
