// The dashboard's entry: sign-in with an API token, the role it has, and the hash router.

import { describe, gql, session, viewer } from "./api.js";
import { clearNotice, duration, h, notify, refreshing, startPage } from "./ui.js";
import { configPage, configsPage, newConfigPage } from "./views/configs.js";
import { deliveriesPage } from "./views/deliveries.js";
import { deliveryPage } from "./views/delivery.js";
import { overviewPage } from "./views/overview.js";
import { rejectedPage } from "./views/rejected.js";

const ME = "query Me { me { role canMutate } }";

// Pages read again on their own every LIVE_SECONDS while shown (not while a form is being
// filled or a dialog is open, nor while the tab is hidden), unless paused; the header says
// when the page was read. An action redraws its page at once.
const LIVE_SECONDS = 10;
const live = {
  paused: sessionStorage.getItem("webhooks-live") === "paused",
  readAt: null,
  timer: null,
  signedOutBecause: null,  // why the API signed this tab out, said again on every sign-in form
};


const ROUTES = [
  [/^\/?$/, overviewPage],
  [/^\/configs$/, configsPage],
  [/^\/configs\/new$/, newConfigPage, { still: true }],
  [/^\/configs\/(.+)$/, configPage],
  [/^\/deliveries$/, deliveriesPage],
  [/^\/deliveries\/(.+)$/, deliveryPage],
  [/^\/rejected$/, rejectedPage],
];

function signInPage(message) {
  setSignedIn(false);
  clearTimeout(live.timer);
  live.readAt = null;
  showLive();
  const input = h("input", { id: "token", name: "token", type: "password", required: true,
    autocomplete: "off", placeholder: "whk_…", "aria-describedby": "token-help" });
  const error = h("p", { class: "error", role: "alert", hidden: !message }, message || "");
  const form = h("form", { class: "card sign-in", onsubmit: async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    try {
      const data = await gql(ME, {}, { token });
      session.set(token);
      live.signedOutBecause = null;
      remember(data.me);
      route();
    } catch (failure) {
      error.textContent = failure.code === "UNAUTHENTICATED"
        ? "That token is not accepted: it is unknown, expired or revoked."
        : describe(failure);
      error.hidden = false;
    }
  } },
  h("h1", {}, "Sign in"),
  h("label", { for: "token" }, "API token"),
  input,
  h("p", { id: "token-help", class: "muted" },
    "Create one with ", h("code", {}, "webhooks tokens create --role operator|viewer --name NAME"),
    ". It is kept for this browser tab only and forgotten when you close it."),
  error,
  h("button", { type: "submit" }, "Sign in"));
  startPage()(form);
  input.focus();
}

function remember(me) {
  viewer.role = me.role;
  viewer.canMutate = me.canMutate;
  setSignedIn(true);
}

function setSignedIn(signedIn) {
  document.getElementById("nav").hidden = !signedIn;
  document.getElementById("sign-out").hidden = !signedIn;
  document.getElementById("who").textContent = signedIn
    ? `${viewer.role.toLowerCase()}${viewer.canMutate ? "" : " (read-only)"}` : "";
  document.body.classList.toggle("read-only", signedIn && !viewer.canMutate);
}

function markCurrent(path) {
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.getAttribute("href").slice(1);
    const current = target === "/" ? path === "/" : path.startsWith(target);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function showLive() {
  const bar = document.getElementById("live");
  bar.hidden = live.readAt === null;
  if (live.readAt === null) return;
  const age = Math.max(0, Math.round((Date.now() - live.readAt) / 1000));
  document.getElementById("live-age").textContent =
    `updated ${age < 1 ? "just now" : `${duration(age)} ago`}${live.paused ? " · paused" : ""}`;
  document.getElementById("live-toggle").textContent =
    live.paused ? "Start auto-refresh" : "Stop auto-refresh";
}

function schedule() {
  clearTimeout(live.timer);
  if (!live.paused && live.readAt !== null) live.timer = setTimeout(refresh, LIVE_SECONDS * 1000);
}

function busy() {
  const active = document.activeElement;
  return Boolean(document.querySelector("dialog[open]")
    || (active && active.closest && active.closest("main form, main input, main select, main textarea")));
}

async function refresh() {
  if (!session.token()) return;
  if (document.hidden || busy()) return schedule();
  const scrolled = window.scrollY;
  refreshing(true);
  try {
    await route({ quietly: true });
  } finally {
    refreshing(false);
  }
  window.scrollTo(0, scrolled);
}

async function route({ quietly = false } = {}) {
  clearTimeout(live.timer);
  // Signed out by the API, then sent elsewhere (a click, a refresh already on its way): the
  // form keeps saying why.
  if (!session.token()) return signInPage(live.signedOutBecause);
  if (!viewer.role) {
    try {
      remember((await gql(ME)).me);
    } catch (error) {
      if (error.code === "UNAUTHENTICATED") return;  // the signed-out event shows the form
      startPage()(h("p", { class: "error", role: "alert" }, describe(error)));
      return;
    }
  }
  const [path, query = ""] = (location.hash.slice(1) || "/").split("?");
  markCurrent(path);
  for (const [pattern, page, { still = false } = {}] of ROUTES) {
    const match = path.match(pattern);
    if (match) {
      await page({ params: match.slice(1).map(decodeURIComponent),
        query: new URLSearchParams(query) });
      if (!session.token() || !viewer.role) return;  // signed out meanwhile: the form stays
      if (!quietly) document.getElementById("main").focus({ preventScroll: true });
      live.readAt = still ? null : Date.now();
      showLive();
      schedule();
      return;
    }
  }
  startPage()(h("p", { class: "error", role: "alert" }, `There is no page at ${path}.`));
}

window.addEventListener("signed-out", (event) => {
  viewer.role = null;
  live.signedOutBecause = event.detail;
  signInPage(event.detail);
});
window.addEventListener("hashchange", () => { clearNotice(); route(); });
window.addEventListener("unhandledrejection", (event) => {
  notify(describe(event.reason), "error");
});
document.getElementById("sign-out").addEventListener("click", () => {
  session.clear();
  viewer.role = null;
  live.signedOutBecause = null;
  notify("Signed out.");
  signInPage();
});
document.getElementById("live-toggle").addEventListener("click", () => {
  live.paused = !live.paused;
  sessionStorage.setItem("webhooks-live", live.paused ? "paused" : "live");
  showLive();
  schedule();
});
setInterval(showLive, 1000);
route();
