// The portal's session: its token (from the address's fragment, then kept in this frame's
// memory and sessionStorage, never in a cookie), what it was granted, its calls to the API, and
// the end of it, which the page says in words and tells the embedding page by postMessage.

import { ApiError, gql } from "/dashboard/api.js";

const STORAGE_KEY = "webhooks.portal.token";
export const EXPIRED_MESSAGE = "webhooks.portal.session-expired";

/** What the session may do (filled in by `start`). */
export const grant = { tenantUid: null, capabilities: [], eventTypes: null, expiresAt: null };

let token = null;
let ended = false;
const endListeners = [];

/** Read the token from `#token=…` (then drop it from the address, so it is neither kept in the
 * history nor shown), else from this frame's sessionStorage. */
export function readToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    sessionStorage.setItem(STORAGE_KEY, given);
    history.replaceState(null, "", location.pathname + location.search);
  }
  token = given || sessionStorage.getItem(STORAGE_KEY);
  return token;
}

export function can(capability) {
  return grant.capabilities.includes(capability);
}

/** Call `listener(reason)` once the session has ended. */
export function onEnd(listener) {
  endListeners.push(listener);
}

/** End the session: forget the token, tell the embedding page, and show why. */
export function end(reason) {
  if (ended) return;
  ended = true;
  token = null;
  sessionStorage.removeItem(STORAGE_KEY);
  if (window.parent !== window) {
    // No secret in it: any page may hear it; the embedding page checks event.origin.
    window.parent.postMessage({ type: EXPIRED_MESSAGE }, "*");
  }
  for (const listener of endListeners) listener(reason);
}

/** Run one GraphQL operation with the session's token; an unknown, expired or revoked token
 * ends the session. */
export async function call(query, variables = {}, options = {}) {
  if (!token) {
    end("missing");
    throw new ApiError("this page was opened without a session", "UNAUTHENTICATED");
  }
  try {
    return await gql(query, variables, { ...options, token });
  } catch (error) {
    if (error.code === "UNAUTHENTICATED") end("refused");
    throw error;
  }
}

const ME = `{ me { tenantUid portal { capabilities eventTypes expiresAt } } }`;

/** Check the session with the API and learn its grant; end it when it is refused, is not a
 * portal session, or acts for another tenant than the address names (`?tenant=`). */
export async function start(expectedTenant) {
  const me = (await call(ME)).me;
  if (!me.portal || !me.tenantUid || (expectedTenant && me.tenantUid !== expectedTenant)) {
    end("another");
    throw new ApiError("this session is not this account's", "UNAUTHENTICATED");
  }
  Object.assign(grant, { tenantUid: me.tenantUid, ...me.portal });
  const left = new Date(grant.expiresAt) - Date.now();
  // Past its end the next call is refused anyway; saying so at once spares a failed click.
  if (left > 0 && left < 2 ** 31) setTimeout(() => end("expired"), left);
  return grant;
}
