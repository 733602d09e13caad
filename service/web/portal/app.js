// The customer portal: one tenant's webhook endpoints, deliveries and secrets, embedded by its
// platform in an iframe. Boots the session from the address, applies the theme the address
// asks for, then shows the endpoints.

import { describe } from "/dashboard/api.js";
import { h, startPage } from "/dashboard/ui.js";
import { endpointsPage } from "./endpoints.js";
import { grant, onEnd, readToken, start } from "./session.js";
import { applyTheme } from "./theme.js";

const ENDED_WORDS = {
  missing: "This page was opened without a session.",
  refused: "Your session has ended: it expired or was revoked.",
  expired: "Your session has expired.",
  another: "This session belongs to another account.",
};

function showEnded(reason) {
  const show = startPage();
  show(h("section", { class: "ended", role: "alert", id: "session-ended" },
    h("h1", {}, ENDED_WORDS[reason] || ENDED_WORDS.refused),
    h("p", {}, "Open this page again from your account to start a new session.")));
}

async function boot() {
  const params = new URLSearchParams(location.search);
  applyTheme(params);
  onEnd(showEnded);
  if (!readToken()) {
    showEnded("missing");
    return;
  }
  try {
    await start(params.get("tenant"));
  } catch (error) {
    if (error.code !== "UNAUTHENTICATED") {
      startPage()(h("p", { class: "error", role: "alert" }, describe(error)));
    }
    return;
  }
  document.getElementById("who").textContent = grant.tenantUid;
  await endpointsPage();
}

boot();
