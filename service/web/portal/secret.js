// A signing secret, shown once (on creation and rotation), with how to verify the requests.

import { h } from "/dashboard/ui.js";
import { verificationSnippets } from "./snippets.js";

export function secretPanel(secret, title, next) {
  const value = h("code", { id: "secret-value" }, secret);
  const copied = h("span", { class: "muted", role: "status" });
  return [
    h("section", { class: "secret", id: "secret-reveal", "aria-label": title },
      h("h2", {}, title),
      h("p", {}, "Copy it now: it is shown only once. Your receiver needs it to check that ",
        "requests come from us."),
      h("pre", {}, value),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: async () => {
          try {
            await navigator.clipboard.writeText(secret);
            copied.textContent = "Copied.";
          } catch {
            copied.textContent = "Select the secret and copy it.";
          }
        } }, "Copy"), copied,
        h("button", { type: "button", id: "secret-done", onclick: next }, "Done"))),
    verificationSnippets(),
  ];
}
