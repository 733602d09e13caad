// Small DOM helpers shared by the views: elements, formatting, notices, confirmations, charts.

import { describe } from "./api.js";

/** Create an element: h("a", {href: "#/"}, "text", child, ...). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
}

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  append(element, children);
  return element;
}

let generation = 0;
let quiet = false;  // a live refresh: keep the page shown until its new content is ready

/** Redraw pages quietly (no "Loading…" in between) while `on`: the live refresh. */
export function refreshing(on) {
  quiet = on;
}

function isLoading(children) {
  return children.flat(Infinity).some((child) => child instanceof Element
    && (child.matches(".loading") || child.querySelector(".loading")));
}

/** Start drawing a new page; return its `show`, which draws only while it is the current page
 * (so a slow answer for a page left behind never replaces the page shown now). */
export function startPage() {
  generation += 1;
  const mine = generation;
  return (...children) => {
    if (mine !== generation) return false;
    if (quiet && isLoading(children)) return true;
    const main = document.getElementById("main");
    main.replaceChildren();
    append(main, children);
    return true;
  };
}

export function heading(text, ...extra) {
  return h("div", { class: "title" }, h("h1", {}, text), ...extra);
}

export function loading(text = "Loading…") {
  return h("p", { class: "muted loading", role: "status" }, text);
}

/** Return a box that says what went wrong, in words. */
export function failure(error) {
  return h("p", { class: "error", role: "alert" }, describe(error));
}

let noticeTimer;
let keepThroughNavigation = false;
/** Show a short message at the top of the page. */
/** Show a notice; `beforeLeaving` keeps it through the navigation that comes next. */
export function notify(message, kind = "info", { beforeLeaving = false } = {}) {
  const notice = document.getElementById("notice");
  notice.textContent = message;
  notice.className = `notice ${kind}`;
  notice.hidden = false;
  keepThroughNavigation = beforeLeaving;
  clearTimeout(noticeTimer);
  if (kind !== "error") noticeTimer = setTimeout(() => { notice.hidden = true; }, 8000);
}

/** Hide the notice when the page changes, unless it was given for the next page. */
export function clearNotice() {
  if (keepThroughNavigation) {
    keepThroughNavigation = false;
    return;
  }
  document.getElementById("notice").hidden = true;
}

/** Show `children` in a modal dialog with Cancel and `confirmLabel`; resolve `answer()` when
 * confirmed, null when cancelled (the button, or Escape). */
function confirmDialog(children, confirmLabel, answer) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "confirm", "aria-label": "Confirm" },
      ...children,
      h("div", { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: () => dialog.close("no") },
          "Cancel"),
        h("button", { type: "button", class: "danger", onclick: () => dialog.close("yes") },
          confirmLabel)));
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "yes" ? answer() : null);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** Ask for a confirmation in a modal dialog; resolve true when confirmed. */
export async function ask(message, confirmLabel) {
  return (await confirmDialog([h("p", {}, message)], confirmLabel, () => true)) === true;
}

/** Ask for a confirmation and an optional reason (kept in the config's health history);
 * resolve { reason } when confirmed, null when cancelled. */
export function askWithReason(message, confirmLabel) {
  const input = h("input", { id: "reason", name: "reason", maxlength: 500,
    placeholder: "e.g. receiver migrating, ticket 1234" });
  return confirmDialog([h("p", {}, message),
    h("label", { for: "reason" }, "Reason (optional, kept in the health timeline)"), input],
  confirmLabel, () => ({ reason: input.value.trim() || null }));
}

/** An instant in the browser's zone, the zone named: "4 Dec 2026, 19:30:05 UTC". */
export function local(iso) {
  return new Date(iso).toLocaleString([], { day: "numeric", month: "short", year: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
}

export function time(iso) {
  if (!iso) return "—";
  return h("time", { datetime: iso, title: new Date(iso).toISOString() }, local(iso));
}

/** Return "3 min ago" / "in 2 h" for an instant. */
export function relative(iso) {
  if (!iso) return "—";
  const seconds = (new Date(iso) - Date.now()) / 1000;
  const text = duration(Math.abs(seconds));
  return h("time", { datetime: iso, title: local(iso) },
    seconds < 0 ? `${text} ago` : `in ${text}`);
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${trimmed(seconds / 3600)} h`;
  return `${trimmed(seconds / 86400)} d`;
}

/** 1 for 1.0, 1.5 for 1.5: one decimal, only when it says something. */
function trimmed(value) {
  return Number(value.toFixed(1)).toString();
}

/** An outbound request's duration: "230 ms", "30.0 s". */
export function elapsed(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function percent(rate) {
  return rate === null || rate === undefined ? "—" : `${(rate * 100).toFixed(1)} %`;
}

/** The address of the list at `path` with `changes` made to its query (a new filter starts
 * at the first page). */
export function listAddress(path, query, changes) {
  const next = new URLSearchParams(query);
  for (const name of ["cursor_after", "cursor_before"]) next.delete(name);
  for (const [name, value] of Object.entries(changes)) {
    if (value) next.set(name, value); else next.delete(name);
  }
  const text = next.toString();
  return text ? `${path}?${text}` : path;
}

const SEARCH_DELAY_MS = 250; // typing pauses this long before the list follows

/** A search box that follows the typing: `follow(words)` once the typing pauses. */
export function searchBox({ id, label, placeholder, value }, follow) {
  let timer;
  const input = h("input", { id, type: "search", autocomplete: "off", "aria-label": label,
    value, placeholder });
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => follow(input.value.trim()), SEARCH_DELAY_MS);
  });
  return input;
}

export function number(n) {
  return Number(n).toLocaleString("en");
}

export function badge(status, text) {
  const word = String(status).toLowerCase();
  return h("span", { class: `badge ${word}` }, text || word.replace("_", " "));
}

/** Wrap a table so that it scrolls sideways on a narrow screen. */
export function table(headers, rows, caption) {
  return h("div", { class: "table-wrap" },
    h("table", {},
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, rows.length ? rows
        : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "Nothing here.")))));
}

export const OUTCOMES = ["success", "http_error", "timeout", "network_error", "blocked",
  "interrupted"];

/** Return a stacked bar chart (SVG) of attempts by outcome per bucket, with its legend. */
export function attemptChart(history) {
  const buckets = history.buckets;
  const width = 720, height = 180, left = 36, bottom = 22;
  const most = Math.max(1, ...buckets.map((b) => b.attempts));
  const step = (width - left) / Math.max(1, buckets.length);
  const bars = [];
  buckets.forEach((bucket, index) => {
    let y = height - bottom;
    const counts = Object.fromEntries(bucket.outcomes.map((o) => [o.outcome.toLowerCase(), o.count]));
    for (const outcome of OUTCOMES) {
      const count = counts[outcome] || 0;
      if (!count) continue;
      const barHeight = (count / most) * (height - bottom - 8);
      y -= barHeight;
      bars.push(s("rect", {
        x: (left + index * step + 1).toFixed(1), y: y.toFixed(1),
        width: Math.max(1, step - 2).toFixed(1), height: barHeight.toFixed(1),
        class: `bar ${outcome}`,
      }, s("title", {}, `${local(bucket.start)}: ${count} ${outcome}`)));
    }
  });
  const first = buckets[0], last = buckets[buckets.length - 1];
  const total = buckets.reduce((sum, b) => sum + b.attempts, 0);
  const label = `Attempts by outcome per ${duration(history.bucketSeconds)}: ${total} in all`;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label,
    class: "chart" },
  s("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, class: "axis" }),
  s("text", { x: left - 4, y: 12, class: "tick", "text-anchor": "end" }, String(most)),
  s("text", { x: left - 4, y: height - bottom, class: "tick", "text-anchor": "end" }, "0"),
  first ? s("text", { x: left, y: height - 6, class: "tick" },
    local(first.start)) : null,
  last ? s("text", { x: width, y: height - 6, class: "tick", "text-anchor": "end" }, "now") : null,
  ...bars);
  return h("figure", { class: "chart-box" }, svg,
    h("figcaption", {}, label,
      h("span", { class: "legend" },
        OUTCOMES.map((o) => h("span", { class: `key ${o}` }, o.replace("_", " ")))),
      history.complete ? null
        : h("span", { class: "muted" },
          " (only the newest attempts were read: the oldest bars count too few)")));
}
