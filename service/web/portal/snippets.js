// How to verify the requests: Python and Node receivers using the Standard Webhooks libraries,
// shown with a placeholder where the endpoint's secret goes (the files under snippets/, which
// the tests run as they are shown).

import { h } from "/dashboard/ui.js";

const LANGUAGES = [["Python", "python"], ["Node", "node"]];

export function verificationSnippets() {
  const section = h("section", { class: "snippets", "aria-label": "Verify the requests" },
    h("h2", {}, "Verify the requests"),
    h("p", { class: "muted" }, "Every request is signed with the endpoint's secret (Standard ",
      "Webhooks). Check the signature before trusting a request; replace ",
      h("code", {}, "whsec_YOUR_ENDPOINT_SECRET"), " with the secret."));
  for (const [title, file] of LANGUAGES) {
    const code = h("code", { class: `snippet-${file}` }, "Loading…");
    section.append(h("details", { class: "snippet" }, h("summary", {}, title),
      h("pre", {}, code)));
    fetch(`/portal/snippets/${file}.txt`)
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((text) => { code.textContent = text; })
      .catch(() => { code.textContent = "This example could not be loaded."; });
  }
  return section;
}
