// The dashboard's entry: sign-in with an API token, the role it has, and the hash router.

import { describe, gql, session, viewer } from "./api.js";
import { clearNotice, duration, h, notify, refreshing, startPage } from "./ui.js";
import { configPage, configsPage, newConfigPage } from "./views/configs.js";
import { deliveriesPage } from "./views/deliveries.js";
import { deliveryPage } from "./views/delivery.js";
import { overviewPage } from "./views/overview.js";
import { rejectedPage } from "./views/rejected.js";
import { tenantPage, tenantsPage } from "./views/tenants.js";
import { forgetTenant, platform, showTenantBar, withTenant } from "./tenancy.js";

const ME = "query Me { me { role canMutate tenantUid } }";

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


// Each page, and how: `still` (no live refresh), `narrows` (a platform token may narrow it to
// one tenant), `platformOnly` (the platform's: a tenant token is told so, not refused).
const ROUTES = [
  [/^\/?$/, overviewPage, { narrows: true }],
  [/^\/configs$/, configsPage, { narrows: true }],
  [/^\/configs\/new$/, newConfigPage, { still: true }],
  [/^\/configs\/(.+)$/, configPage],
  [/^\/deliveries$/, deliveriesPage, { narrows: true }],
  [/^\/deliveries\/(.+)$/, deliveryPage],
  [/^\/tenants$/, tenantsPage, { platformOnly: true }],
  [/^\/tenants\/(.+)$/, tenantPage, { platformOnly: true }],
  [/^\/rejected$/, rejectedPage, { platformOnly: true }],
];

function signInPage(message) {
  setSignedIn(false);
  forgetTenant();
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
  viewer.tenantUid = me.tenantUid;
  setSignedIn(true);
}

function setSignedIn(signedIn) {
  document.getElementById("nav").hidden = !signedIn;
  document.getElementById("sign-out").hidden = !signedIn;
  document.getElementById("who").textContent = signedIn
    ? `${viewer.role.toLowerCase()}${viewer.canMutate ? "" : " (read-only)"}` +
      (viewer.tenantUid ? ` · tenant ${viewer.tenantUid}` : "") : "";
  document.body.classList.toggle("read-only", signedIn && !viewer.canMutate);
  for (const link of document.querySelectorAll("#nav [data-platform]")) {
    link.hidden = signedIn && !platform();
  }
}

/** Mark the menu's link to the page shown; the links to the pages a tenant narrows keep the
 * tenant chosen. */
function markCurrent(path) {
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.dataset.page || link.getAttribute("href").slice(1);
    if (link.dataset.page) link.setAttribute("href", withTenant(`#${target}`));
    const current = target === "/" ? path === "/" : path.startsWith(target);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function platformPage() {
  return h("div", {}, h("h1", {}, "The platform's page"),
    h("p", { class: "muted", id: "platform-only" }, `This page shows every tenant's data; your ` +
      `token acts for the tenant ${viewer.tenantUid} only. `,
    h("a", { href: "#/" }, "Your overview")));
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
    || (active && active.closest && active.closest(
      "main form, main input, main select, main textarea, #tenant-bar input")));
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
  const [path, text = ""] = (location.hash.slice(1) || "/").split("?");
  const query = new URLSearchParams(text);
  for (const [pattern, page, { still = false, narrows = false, platformOnly = false } = {}]
    of ROUTES) {
    const match = path.match(pattern);
    if (match) {
      showTenantBar({ narrows, query });
      markCurrent(path);
      if (platformOnly && !platform()) startPage()(platformPage());
      else await page({ params: match.slice(1).map(decodeURIComponent), query });
      if (!session.token() || !viewer.role) return;  // signed out meanwhile: the form stays
      if (!quietly) document.getElementById("main").focus({ preventScroll: true });
      live.readAt = still ? null : Date.now();
      showLive();
      schedule();
      return;
    }
  }
  showTenantBar({ narrows: false, query });
  markCurrent(path);
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
