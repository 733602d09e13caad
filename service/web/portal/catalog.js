// The catalog of event types as this session may use it: the types its grant covers, with
// their descriptions, schemas and examples, read once per page load.

import { call, grant } from "./session.js";

const CATALOG = `{ eventTypes(first: 1000) { edges { node {
  name description groupName examples schema deprecated deprecatedReason } } } }`;

let loaded = null;

/** Return whether the subscription `pattern` reaches the event type `type`. */
export function matches(pattern, type) {
  return pattern === "*" || pattern === type
    || (pattern.endsWith(".*") && type.startsWith(pattern.slice(0, -1)));
}

/** Return whether this session may subscribe to `type` (the server checks it too). */
export function allowed(type) {
  return grant.eventTypes === null || grant.eventTypes.some((pattern) => matches(pattern, type));
}

/** Return the catalog's types this session may subscribe to, by name. */
export async function eventTypes() {
  if (!loaded) {
    loaded = call(CATALOG).then((data) => data.eventTypes.edges.map((edge) => edge.node)
      .filter((type) => allowed(type.name)));
    loaded.catch(() => { loaded = null; });
  }
  return loaded;
}
