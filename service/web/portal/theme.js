// The theme an embedding page asks for in the address: `accent` (a hex colour), `theme`
// (light or dark) and `header` (hide). Applied through the CSS object model, which a strict
// Content-Security-Policy allows (an inline style attribute it would not).

const HEX_COLOUR = /^#?([0-9a-f]{3}|[0-9a-f]{6})$/i;

export function applyTheme(params) {
  const root = document.documentElement;
  const accent = params.get("accent");
  if (accent && HEX_COLOUR.test(accent)) {
    root.style.setProperty("--accent", accent.startsWith("#") ? accent : `#${accent}`);
  }
  if (["light", "dark"].includes(params.get("theme"))) root.dataset.theme = params.get("theme");
  if (params.get("header") === "hide") document.getElementById("portal-header").hidden = true;
}
