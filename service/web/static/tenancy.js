// The tenant a platform token's pages are narrowed to. It is named in the address
// (`tenant=UID`), so that a narrowed view can be shared; the overview, configs and deliveries
// pages read it there, the bar under the header picks it, and the menu keeps it across pages.
// A tenant token's pages show its own tenant only: it has no choice to make.

import { gql, viewer } from "./api.js";
import { tenantPicker } from "./picker.js";
import { h } from "./ui.js";

const NAME = "query TenantName($uid: String!) { tenant(uid: $uid) { uid name } }";

// The tenant the narrowing pages were last shown for (null: every tenant).
const choice = { uid: null };
const names = new Map(); // uid -> {uid, name}, once looked up

/** True when the signed-in token acts for the whole platform. */
export function platform() {
  return viewer.role !== null && !viewer.tenantUid;
}

/** The uid of the tenant a narrowing page's address names; null for every tenant (always for
 * a tenant token, whose pages are its own tenant's anyway). */
export function narrowedTo(query) {
  return platform() ? query.get("tenant") || null : null;
}

/** Return the address `href` (`#/path?…`) narrowed to `uid` (default: the tenant chosen). */
export function withTenant(href, uid = choice.uid) {
  if (!uid) return href;
  const [path, text = ""] = href.split("?");
  const query = new URLSearchParams(text);
  query.set("tenant", uid);
  return `${path}?${query}`;
}

/** Return the address of the page shown now, narrowed to `uid` (null: every tenant); the
 * page's cursors and configs, another tenant's, are dropped. */
function narrowedHere(uid) {
  const [path, text = ""] = (location.hash.slice(1) || "/").split("?");
  const query = new URLSearchParams(text);
  for (const name of ["cursor_after", "cursor_before", "config"]) query.delete(name);
  if (uid) query.set("tenant", uid); else query.delete("tenant");
  const rest = query.toString();
  return `#${path}${rest ? `?${rest}` : ""}`;
}

async function nameOf(uid) {
  if (!names.has(uid)) {
    try {
      names.set(uid, (await gql(NAME, { uid })).tenant);
    } catch {
      return { uid, name: null }; // the page says why in words (an unknown uid: not found)
    }
  }
  return names.get(uid);
}

/** Remember the names of tenants a page loaded ({uid, name} each). */
export function rememberTenants(tenants) {
  for (const tenant of tenants) if (tenant && tenant.uid) names.set(tenant.uid, tenant);
}

/** Draw the tenant bar for the page shown: for a platform token on a page it narrows, the
 * picker with the address's tenant; hidden elsewhere. Kept as it is while its tenant stays
 * (a live refresh never throws away what is being typed in it). */
export async function showTenantBar({ narrows, query }) {
  const bar = document.getElementById("tenant-bar");
  if (!narrows || !platform()) {
    bar.hidden = true;
    return;
  }
  const uid = narrowedTo(query);
  choice.uid = uid;
  if (!bar.hidden && bar.dataset.uid === (uid || "")) return;
  bar.dataset.uid = uid || "";
  const chosen = uid ? await nameOf(uid) : null;
  if (bar.dataset.uid !== (uid || "")) return; // another page was chosen meanwhile
  bar.replaceChildren(tenantPicker({ id: "tenant-pick", chosen,
    choose: (picked) => { location.hash = narrowedHere(picked); } }));
  bar.hidden = false;
}

/** Forget the choice (signed out). */
export function forgetTenant() {
  choice.uid = null;
  const bar = document.getElementById("tenant-bar");
  bar.hidden = true;
  bar.dataset.uid = "";
}

/** A link to a tenant's page, by name (the uid on hover). */
export function tenantLink(tenant) {
  if (!tenant) return "—";
  return h("a", { href: `#/tenants/${encodeURIComponent(tenant.uid)}`, title: tenant.uid,
    class: "tenant" }, tenant.name || tenant.uid);
}
