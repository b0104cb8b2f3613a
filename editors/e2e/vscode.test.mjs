// End-to-end test of the VS Code extension in a real VS Code (code-server),
// driven through Debian's chromium by playwright-core. It installs the
// packaged .vsix, opens the fixture's train.py, hovers `compile` in
// `torch.compile`, and checks the hover names torch/__init__.py:LINE, the
// Problems view shows the threaded cudagraph diagnostic, and the quick fix
// is offered. Screenshots go to TORCHLSP_SCREENSHOT_DIR.
//
// Environment: TORCHLSP_BIN, TORCHLSP_FIXTURE_WS, TORCHLSP_PYTHON,
// TORCHLSP_PYTHONPATH, CODE_SERVER (its executable), TORCHLSP_VSIX,
// TORCHLSP_SCREENSHOT_DIR (optional), CHROMIUM (default /usr/bin/chromium).
import { strict as assert } from "node:assert";
import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { chromium } from "playwright-core";

const here = path.dirname(new URL(import.meta.url).pathname);
const repo = path.resolve(here, "../..");
const env = (name, fallback) => process.env[name] || fallback;

const cfg = {
  bin: path.resolve(repo, env("TORCHLSP_BIN", "bin/torchlsp")),
  ws: path.resolve(repo, env("TORCHLSP_FIXTURE_WS", "editors/testdata/workspace")),
  python: env("TORCHLSP_PYTHON", "/usr/bin/python3"),
  pythonpath: path.resolve(repo, env("TORCHLSP_PYTHONPATH", "editors/testdata/site")),
  codeServer: env("CODE_SERVER", "/var/cache/torchlsp-editors/code-server-4.99.4/node_modules/.bin/code-server"),
  vsix: path.resolve(repo, env("TORCHLSP_VSIX", "editors/vscode/torchlsp.vsix")),
  shots: env("TORCHLSP_SCREENSHOT_DIR", ""),
  chromium: env("CHROMIUM", "/usr/bin/chromium"),
  readyMs: Number(env("TORCHLSP_READY_TIMEOUT", "120")) * 1000,
};

const run = promisify(execFile);
let tmp, ws, server, browser, page, port;

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, deadlineMs) {
  const end = Date.now() + deadlineMs;
  let last;
  while (Date.now() < end) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server not healthy at ${url}: ${last}`);
}

async function shot(name) {
  if (!cfg.shots || !page) return;
  fs.mkdirSync(cfg.shots, { recursive: true });
  await page.screenshot({ path: path.join(cfg.shots, name) });
}

function writeJSON(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

before(async () => {
  for (const [what, p] of [["server binary", cfg.bin], ["code-server", cfg.codeServer], ["vsix", cfg.vsix], ["chromium", cfg.chromium]]) {
    assert.ok(fs.existsSync(p), `${what} not found: ${p}`);
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "torchlsp-vscode-"));
  ws = path.join(tmp, "workspace");
  fs.cpSync(cfg.ws, ws, { recursive: true });
  const dirs = { userData: path.join(tmp, "user-data"), extensions: path.join(tmp, "extensions") };
  const childEnv = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
    XDG_DATA_HOME: path.join(tmp, "xdg-data"),
  };
  await run(cfg.codeServer, ["--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions, "--install-extension", cfg.vsix], { env: childEnv });

  const torchlsp = {
    "torchlsp.path": cfg.bin,
    "torchlsp.targets": {
      fixture: { python: cfg.python, env: { PYTHONPATH: cfg.pythonpath }, packages: ["torch"] },
      // The interpreter's own torch: Debian's 1.13 has no torch.compile, so
      // the repro runs its stand-in backend and reports in full.
      debian: { python: cfg.python, packages: ["torch"] },
    },
    "torchlsp.defaultTarget": "fixture",
    "torchlsp.logLevel": "debug",
  };
  const quiet = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "extensions.ignoreRecommendations": true,
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "editor.hover.delay": 200,
    "editor.minimap.enabled": false,
    "window.commandCenter": false,
  };
  // Machine-scoped settings of a code-server window are read from Machine/.
  writeJSON(path.join(dirs.userData, "User", "settings.json"), { ...quiet, ...torchlsp });
  writeJSON(path.join(dirs.userData, "Machine", "settings.json"), torchlsp);

  port = await freePort();
  server = spawn(
    cfg.codeServer,
    ["--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions,
      "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", ws],
    { env: childEnv, detached: true, stdio: ["ignore", fs.openSync(path.join(tmp, "code-server.log"), "w"), fs.openSync(path.join(tmp, "code-server.err"), "w")] },
  );
  await waitHealthy(`http://127.0.0.1:${port}/healthz`, 30000);

  browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 860 } });
  page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
  await page.waitForSelector(".monaco-workbench", { timeout: 60000 });
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  // Its file watcher outlives the parent: end the whole process group.
  if (server?.pid) {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {}
  }
  if (tmp && process.env.TORCHLSP_KEEP_TMP !== "1") fs.rmSync(tmp, { recursive: true, force: true });
  else if (tmp) console.log(`# kept ${tmp}`);
});

async function openFixtureFile() {
  await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } }).catch(() => {});
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  await input.fill("train.py");
  await page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout: 15000 });
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const lines = document.querySelector(".editor-instance .view-lines");
    return lines && lines.textContent.replace(/\u00a0/g, " ").includes("torch.compile(");
  }, null, { timeout: 30000 });
}

// The screen rectangle of `word` in the first editor line that contains `context`.
async function wordBox(context, word) {
  return page.evaluate(([context, word]) => {
    for (const line of document.querySelectorAll(".editor-instance .view-lines .view-line")) {
      const text = line.textContent.replace(/\u00a0/g, " ");
      const at = text.indexOf(context);
      if (at < 0) continue;
      const target = at + context.indexOf(word);
      const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
      let offset = 0;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const len = node.textContent.length;
        if (target < offset + len) {
          const range = document.createRange();
          range.setStart(node, target - offset);
          range.setEnd(node, Math.min(len, target - offset + word.length));
          const r = range.getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        }
        offset += len;
      }
    }
    return null;
  }, [context, word]);
}

// Puts the cursor on `word` in the first line of train.py that contains
// `context`, through Go to Line (a click can land on a hover or a widget).
async function gotoText(context, word) {
  const lines = fs.readFileSync(path.join(ws, "train.py"), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(context));
  assert.ok(i >= 0, `no line with ${context} in train.py`);
  const col = lines[i].indexOf(context) + context.indexOf(word) + 2;
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+G");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  await input.fill(`:${i + 1}:${col}`);
  await page.keyboard.press("Enter");
  await page.locator(".statusbar-item", { hasText: `Ln ${i + 1}, Col ${col}` }).first().waitFor({ timeout: 10000 });
}

// Runs a command from the palette by its title (F1: the browser keeps
// Control+Shift+P for itself).
// `filter` is typed; the row matching `title` (a string or RegExp) is run.
async function runCommand(filter, title = filter) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  await input.fill(`>${filter}`);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 15000 });
  await row.click();
}

test("code-server opens the fixture and the extension activates", async () => {
  await openFixtureFile();
  // The status bar item appears once the extension runs.
  await page.locator(".statusbar-item", { hasText: "fixture" }).first().waitFor({ timeout: 60000 });
});

test("hover on torch.compile shows the target's source location", async () => {
  const box = await wordBox("torch.compile(", "compile");
  assert.ok(box, "no torch.compile( on screen");
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2;
  await page.mouse.click(x, y);
  const hover = page.locator(".monaco-hover:not(.hidden)");
  const end = Date.now() + cfg.readyMs;
  let text = "";
  // The first hovers can come before the extension activated or the target
  // was indexed: re-hover, bounded by the ready timeout.
  for (let attempt = 1; Date.now() < end; attempt++) {
    await page.mouse.move(x, y + 200);
    await page.mouse.move(x, y, { steps: 4 });
    try {
      await page.waitForFunction(
        () => [...document.querySelectorAll(".monaco-hover")].some((h) => /torch\/__init__\.py:\d+/.test(h.textContent)),
        null,
        { timeout: 8000 },
      );
      text = await hover.filter({ hasText: /torch\/__init__\.py:\d+/ }).first().innerText();
      break;
    } catch {
      text = (await hover.allInnerTexts()).join("\n");
    }
  }
  await shot("vscode-hover.png");
  assert.match(text, /torch\/__init__\.py:\d+/, `hover text: ${text}`);
  assert.match(text, /compile/);
});

test("Problems view shows the threaded cudagraph diagnostic, with a quick fix", async () => {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: /cudagraph|thread/i }).first();
  await row.waitFor({ timeout: cfg.readyMs });
  const text = await row.innerText();
  assert.match(text, /cudagraph|thread/i);
  assert.match(text, /TL001/, `problem row: ${text}`);

  // Put the cursor on the flagged argument and ask for quick fixes.
  await page.mouse.move(5, 5);
  await gotoText('mode="reduce-overhead"', "reduce");
  await page.keyboard.press("Control+Period");
  const widget = page.locator(".action-widget");
  await widget.waitFor({ state: "visible", timeout: 20000 });
  // The list fills in as the providers answer: wait for the edit fix.
  await page.waitForFunction(
    () => /CUDA graphs off|without CUDA graphs|no-cudagraphs/i.test(document.querySelector(".action-widget")?.textContent ?? ""),
    null,
    { timeout: 20000 },
  ).catch(() => {});
  const actions = await widget.innerText();
  await shot("vscode-quickfix.png");
  assert.match(actions, /CUDA graphs off|without CUDA graphs|no-cudagraphs/i, `quick fixes: ${actions}`);
  assert.match(actions, /Run threaded repro/, `quick fixes: ${actions}`);
  await page.keyboard.press("Escape");
});

// The newest report.md under the workspace's repro folder, or "".
function newestReport() {
  const dir = path.join(ws, ".torchlsp", "repros");
  if (!fs.existsSync(dir)) return "";
  const runs = fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, "report.md"))).sort();
  return runs.length > 0 ? path.join(dir, runs[runs.length - 1], "report.md") : "";
}

test("Run Threaded Repro Here shows progress and the rendered report", async () => {
  // Room for the report, then the cursor on the compile call and the command.
  await runCommand("View: Hide Panel", /View: (Close|Hide) Panel/);
  await runCommand("View: Hide Primary Side Bar", /View: (Close|Hide) Primary Side Bar/);
  await gotoText("torch.compile(", "compile");
  await runCommand("TorchLSP: Run Threaded Repro Here");
  const input = page.locator(".quick-input-widget input.input");
  // Several targets are configured: the extension asks which.
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "every target" }).first().waitFor({ timeout: 15000 });
  await input.fill("debian");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "debian" }).first().waitFor({ timeout: 5000 });
  await page.keyboard.press("Enter");

  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: /threaded repro/i }).first();
  await toast.waitFor({ timeout: 15000 });

  // The report opens as a rendered markdown preview.
  const tab = page.locator(".tabs-container .tab", { hasText: /Preview report\.md/ }).first();
  await tab.waitFor({ timeout: cfg.readyMs });
  const report = newestReport();
  assert.ok(report, "no report.md written under the workspace");
  const md = fs.readFileSync(report, "utf8");
  assert.match(md, /repro on `debian`/);
  assert.match(md, /AssertionError/);
  // The preview renders in a webview: wait for its table, then take the picture.
  const frame = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await frame.locator("table").first().waitFor({ timeout: 30000 });
  const tableText = await frame.locator("table").first().innerText();
  assert.match(tableText, /cudagraph-trees-off/);
  // The report is shown once: no untitled copy of its markdown.
  const untitled = await page.locator(".tabs-container .tab", { hasText: /^Untitled/ }).count();
  assert.equal(untitled, 0, "the report's markdown also opened as an untitled document");
  await page.waitForTimeout(500);
  await shot("vscode-repro.png");
});
