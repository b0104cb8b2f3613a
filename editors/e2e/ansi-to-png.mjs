// Renders a terminal screen captured with `tmux capture-pane -p -e` (text
// with SGR escape codes) to a PNG: the codes become styled HTML spans, and
// Debian's chromium screenshots the page through playwright-core.
// Usage: node ansi-to-png.mjs IN.ansi OUT.png [TITLE]
import fs from "node:fs";
import { pathToFileURL } from "node:url";

// xterm's 16 base colours.
const base16 = [
  "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
  "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
];
const defaults = { fg: "#d0d0d0", bg: "#1c1c1c" };

/** Maps an xterm 256-colour index to CSS. */
export function color256(n) {
  if (n < 16) return base16[n];
  if (n < 232) {
    const i = n - 16;
    const level = (v) => (v === 0 ? 0 : 55 + v * 40);
    return `rgb(${level(Math.floor(i / 36))},${level(Math.floor(i / 6) % 6)},${level(i % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

function escapeHTML(s) {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// applySGR updates style for one SGR parameter list; unknown codes are ignored.
function applySGR(style, params) {
  const p = params.length === 0 ? [0] : params;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === 0) Object.assign(style, { fg: null, bg: null, bold: false, italic: false, underline: false, reverse: false, dim: false, strike: false });
    else if (c === 1) style.bold = true;
    else if (c === 2) style.dim = true;
    else if (c === 3) style.italic = true;
    else if (c === 4) style.underline = true;
    else if (c === 7) style.reverse = true;
    else if (c === 9) style.strike = true;
    else if (c === 22) style.bold = style.dim = false;
    else if (c === 23) style.italic = false;
    else if (c === 24) style.underline = false;
    else if (c === 27) style.reverse = false;
    else if (c === 29) style.strike = false;
    else if (c >= 30 && c <= 37) style.fg = base16[c - 30];
    else if (c === 39) style.fg = null;
    else if (c >= 40 && c <= 47) style.bg = base16[c - 40];
    else if (c === 49) style.bg = null;
    else if (c >= 90 && c <= 97) style.fg = base16[c - 90 + 8];
    else if (c >= 100 && c <= 107) style.bg = base16[c - 100 + 8];
    else if (c === 38 || c === 48 || c === 58) {
      const key = c === 38 ? "fg" : c === 48 ? "bg" : null;
      let value = null;
      if (p[i + 1] === 5) {
        value = color256(p[i + 2] ?? 0);
        i += 2;
      } else if (p[i + 1] === 2) {
        value = `rgb(${p[i + 2] ?? 0},${p[i + 3] ?? 0},${p[i + 4] ?? 0})`;
        i += 4;
      }
      if (key) style[key] = value;
    }
  }
}

function css(style) {
  let fg = style.fg ?? defaults.fg;
  let bg = style.bg ?? defaults.bg;
  if (style.reverse) [fg, bg] = [bg, fg];
  const rules = [`color:${fg}`, `background:${bg}`];
  if (style.bold) rules.push("font-weight:bold");
  if (style.italic) rules.push("font-style:italic");
  if (style.dim) rules.push("opacity:0.7");
  const deco = [style.underline && "underline", style.strike && "line-through"].filter(Boolean);
  if (deco.length) rules.push(`text-decoration:${deco.join(" ")}`);
  return rules.join(";");
}

/** Converts captured terminal text to an HTML fragment of styled spans, one div a line. */
export function ansiToHTML(text) {
  const style = { fg: null, bg: null };
  const lines = text.replace(/\n$/, "").split("\n");
  return lines
    .map((line) => {
      let html = "";
      let last = 0;
      const re = /\x1b\[([0-9;:]*)([A-Za-z])/g;
      const flush = (s) => {
        if (s) html += `<span style="${css(style)}">${escapeHTML(s)}</span>`;
      };
      for (let m = re.exec(line); m; m = re.exec(line)) {
        flush(line.slice(last, m.index));
        last = re.lastIndex;
        if (m[2] === "m") applySGR(style, m[1] === "" ? [] : m[1].split(/[;:]/).map(Number));
      }
      flush(line.slice(last).replace(/\x1b\][^\x07]*\x07/g, ""));
      return `<div class="l">${html || "&nbsp;"}</div>`;
    })
    .join("");
}

/** A full page showing the screen in a window frame with a title. */
export function page(text, title) {
  return `<!doctype html><meta charset="utf-8"><style>
body{margin:0;background:#2b2b2b;font-family:"DejaVu Sans Mono",monospace}
.frame{display:inline-block;margin:12px;border-radius:8px;overflow:hidden;box-shadow:0 4px 18px #000a}
.title{background:#3c3c3c;color:#ccc;font:13px "DejaVu Sans",sans-serif;padding:6px 12px}
.screen{background:${defaults.bg};color:${defaults.fg};padding:6px 8px;font-size:14px;line-height:18px;white-space:pre}
.l{height:18px}
</style><div class="frame"><div class="title">${escapeHTML(title)}</div><div class="screen">${ansiToHTML(text)}</div></div>`;
}

async function main() {
  const [input, output, title = "terminal"] = process.argv.slice(2);
  if (!input || !output) {
    console.error("usage: node ansi-to-png.mjs IN.ansi OUT.png [TITLE]");
    process.exit(2);
  }
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  try {
    const p = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await p.setContent(page(fs.readFileSync(input, "utf8"), title));
    await p.locator(".frame").screenshot({ path: output });
  } finally {
    await browser.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
