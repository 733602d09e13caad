// The GraphQL client of the dashboard: the token of this browser session, errors in words.

const TOKEN_KEY = "webhooks.token";

const CODE_WORDS = {
  UNAUTHENTICATED: "Not signed in",
  FORBIDDEN: "Not allowed",
  NOT_FOUND: "Not found",
  NOT_ELIGIBLE: "Not possible now",
  BAD_USER_INPUT: "Invalid input",
  IDEMPOTENCY_CONFLICT: "Already done differently",
  UNAVAILABLE: "Service unavailable",
  INTERNAL_SERVER_ERROR: "Server error",
  GRAPHQL_VALIDATION_FAILED: "The dashboard sent a query the API does not accept",
};

/** What the signed-in token may do, and the tenant it acts for (null: the whole platform);
 * views read it to hide operator-only controls and the platform's views. */
export const viewer = { role: null, canMutate: false, tenantUid: null };

export class ApiError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  set: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Return a fresh idempotency key (one per click). */
export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "dash-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Describe an error for a person: what kind, then the API's own message. */
export function describe(error) {
  if (!(error instanceof ApiError)) return `Unexpected error: ${error.message || error}`;
  const words = CODE_WORDS[error.code];
  return words ? `${words}: ${error.message}` : error.message;
}

/** Run one GraphQL operation; return its data or throw an ApiError that says what failed. */
export async function gql(query, variables = {}, { idempotencyKey, token } = {}) {
  const bearer = token || session.token();
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST", headers, body: JSON.stringify({ query, variables }),
    });
  } catch (error) {
    throw new ApiError(`the service cannot be reached (${error.message})`, "NETWORK");
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(
      `the service answered HTTP ${response.status} ${response.statusText} without a ` +
      "GraphQL body", `HTTP_${response.status}`);
  }
  if (body.errors && body.errors.length) {
    const code = (body.errors[0].extensions || {}).code || "ERROR";
    const message = body.errors.map((e) => e.message).join("; ");
    if (code === "UNAUTHENTICATED" && !token) {
      session.clear();
      window.dispatchEvent(new CustomEvent("signed-out", {
        detail: "Your token is no longer accepted (expired, revoked or unknown). " +
                "Sign in again.",
      }));
    }
    throw new ApiError(message, code);
  }
  if (!response.ok || !body.data) {
    throw new ApiError(`the service answered HTTP ${response.status}`, `HTTP_${response.status}`);
  }
  return body.data;
}
