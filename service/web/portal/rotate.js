// Rotating an endpoint's secret: the new one is shown once; the old one keeps signing beside it
// for the grace chosen (none, to stop a leaked secret at once).

import { describe } from "/dashboard/api.js";
import { h, heading, notify, startPage } from "/dashboard/ui.js";
import { endpointPage } from "./endpoint.js";
import { secretPanel } from "./secret.js";
import { call } from "./session.js";

const ROTATE = `mutation Rotate($id: ID!, $grace: Int) {
  rotateConfigSecret(id: $id, graceSeconds: $grace) { secret } }`;
const GRACES = [["0", "Stop the old secret now (it leaked)"], ["3600", "1 hour"],
  ["86400", "24 hours"], ["604800", "7 days"]];

function rotateDialog(config) {
  const grace = h("select", { id: "rotate-grace", name: "grace" },
    GRACES.map(([value, label]) => h("option", { value, selected: value === "86400" }, label)));
  const dialog = h("dialog", { class: "confirm", "aria-label": "Rotate the secret" },
    h("p", {}, "A new secret signs every request from now on. For how long should the old ",
      "one sign beside it, while your receiver switches?"),
    h("label", { for: "rotate-grace" }, "The old secret keeps signing for"), grace,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "secondary", onclick: () => dialog.close("no") },
        "Cancel"),
      h("button", { type: "button", id: "rotate-confirm", onclick: () => dialog.close("yes") },
        "Rotate")));
  dialog.addEventListener("close", async () => {
    dialog.remove();
    if (dialog.returnValue !== "yes") return;
    try {
      const rotated = (await call(ROTATE, { id: config.id, grace: Number(grace.value) }))
        .rotateConfigSecret;
      startPage()(heading("Secret rotated"),
        secretPanel(rotated.secret, "The new signing secret", () => endpointPage(config.id)));
    } catch (error) {
      notify(describe(error), "error");
    }
  });
  document.body.append(dialog);
  dialog.showModal();
}

export function rotateButton(config) {
  return h("button", { type: "button", id: "rotate-secret", onclick: () => rotateDialog(config) },
    "Rotate secret");
}
