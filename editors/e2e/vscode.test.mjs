// End-to-end test of the VS Code extension in a real VS Code (code-server),
// driven through Debian's chromium by playwright-core. It installs the
// packaged .vsix and opens the fixture workspace, whose torchlsp.toml
// (trusted before the start) defines the fixture target and makes it the
// default; the user's settings define only a second target and no default.
// It checks that the toml's default answers (status bar, hover into
// torch/__init__.py:LINE), the diagnostics (TL001 in train.py, TL011 in
// serve.py) and their quick fixes, the repro on
// every target with each report rendered, the doctor rendered, a changed
// toml losing its trust and the Trust command restoring it, Select Target
// moving the status bar, the mirror opening read-only, a real traceback in
// a .log linking into the mirror (Ctrl+click opens it at the line) and Map
// Traceback putting the exception on the script, Find All References, Show
// Call Hierarchy, Go to Symbol in Workspace and the outline from a
// workspace file into torch and inside the mirror, and the site going
// into the Python servers' settings, with which pyright from npm resolves
// torch.compile into it. Screenshots go to TORCHLSP_SCREENSHOT_DIR.
// Last, given TORCHLSP_TORCH26_* (scripts/editors-test.sh's torch 2.6 step,
// which runs it alone), a second workspace on a real torch 2.6 in LXC
// container 200 (target ct200, `pct exec 200 --`): hover, definition and
// TL001 at the container's own lines.
//
// Environment: TORCHLSP_BIN, TORCHLSP_FIXTURE_WS, TORCHLSP_PYTHON,
// TORCHLSP_PYTHONPATH, CODE_SERVER (its executable), TORCHLSP_VSIX,
// TORCHLSP_SCREENSHOT_DIR (optional), CHROMIUM (default /usr/bin/chromium),
// PYRIGHT_DIR (npm prefix holding pyright; default /var/cache/torchlsp-pyright).
import { strict as assert } from "node:assert";
import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { chromium } from "playwright-core";
import { LspClient, nestSettings, pyrightDefinition, pyrightLangserver } from "./pyright-site.mjs";

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
let tmp, ws, server, browser, page, port, dirs, childEnv;
// An extra path the user set in the workspace: the extension must keep it.
const ownExtraPath = "/home/user/own/stubs";

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

// The settings the Python extensions declare (Pylance/pyright, basedpyright,
// pylsp): VS Code writes only declared settings, and these tests install no
// Python extension, so a folder extension declares them, and nothing else.
function pythonSettingsExtension(extensionsDir) {
  const name = "torchlsp-test.python-settings-0.0.1";
  const dir = path.join(extensionsDir, name);
  const list = { type: "array", items: { type: "string" }, default: [], scope: "resource" };
  writeJSON(path.join(dir, "package.json"), {
    name: "python-settings", publisher: "torchlsp-test", version: "0.0.1", engines: { vscode: "^1.82.0" },
    contributes: { configuration: { properties: {
      "python.analysis.extraPaths": list, "basedpyright.analysis.extraPaths": list, "pylsp.plugins.jedi.extra_paths": list,
    } } },
  });
  // Listed as an installed extension, as --install-extension would.
  const index = path.join(extensionsDir, "extensions.json");
  const installed = JSON.parse(fs.readFileSync(index, "utf8"));
  installed.push({
    identifier: { id: "torchlsp-test.python-settings" },
    version: "0.0.1",
    location: { $mid: 1, fsPath: dir, external: `file://${dir}`, path: dir, scheme: "file" },
    relativeLocation: name,
    metadata: { installedTimestamp: Date.now(), source: "vsix" },
  });
  fs.writeFileSync(index, JSON.stringify(installed));
}

function torchlspSettings(extra = {}) {
  return {
    "torchlsp.path": cfg.bin,
    // The fixture target comes from the workspace's torchlsp.toml; the
    // interpreter's own torch (Debian's 1.13 has no torch.compile, so the
    // repro runs its stand-in backend) from here. No default target.
    "torchlsp.targets": { debian: { python: cfg.python, packages: ["torch"] } },
    "torchlsp.logLevel": "debug",
    // The test's own Python "server" is only the settings' declarations:
    // torchlsp's full hovers stay, as they would beside no Python server.
    "torchlsp.site.hover": "full",
    ...extra,
  };
}

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
  // The terminal draws text in the DOM, where the test finds it.
  "terminal.integrated.gpuAcceleration": "off",
  // The fixture target is this machine, so its paths also exist here and
  // VS Code's own file links would compete with torchlsp's for the hover;
  // a real target's paths do not exist locally.
  "terminal.integrated.enableFileLinks": "off",
};

// Writes the user's settings; machine-scoped settings of a code-server
// window are read from Machine/.
function writeUserSettings(torchlsp) {
  writeJSON(path.join(dirs.userData, "User", "settings.json"), { ...quiet, ...torchlsp });
  writeJSON(path.join(dirs.userData, "Machine", "settings.json"), torchlsp);
}

before(async () => {
  for (const [what, p] of [["server binary", cfg.bin], ["code-server", cfg.codeServer], ["vsix", cfg.vsix], ["chromium", cfg.chromium]]) {
    assert.ok(fs.existsSync(p), `${what} not found: ${p}`);
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "torchlsp-vscode-"));
  ws = path.join(tmp, "workspace");
  fs.cpSync(cfg.ws, ws, { recursive: true });
  fs.writeFileSync(path.join(ws, "torchlsp.toml"), [
    'default = "fixture"',
    "",
    "[targets.fixture]",
    `python = ${JSON.stringify(cfg.python)}`,
    `env = { PYTHONPATH = ${JSON.stringify(cfg.pythonpath)} }`,
    'packages = ["torch"]',
    "",
  ].join("\n"));
  writeJSON(path.join(ws, ".vscode", "settings.json"), { "python.analysis.extraPaths": [ownExtraPath] });
  dirs = { userData: path.join(tmp, "user-data"), extensions: path.join(tmp, "extensions") };
  childEnv = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(tmp, "xdg-config"),
    XDG_DATA_HOME: path.join(tmp, "xdg-data"),
    // Trust records of this run only; the server reads them from here too.
    XDG_STATE_HOME: path.join(tmp, "xdg-state"),
  };
  // Trusted as it is now: the server uses its targets from the start.
  await run(cfg.bin, ["trust", ws], { env: childEnv });
  await run(cfg.codeServer, ["--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions, "--install-extension", cfg.vsix], { env: childEnv });
  pythonSettingsExtension(dirs.extensions);
  writeUserSettings(torchlspSettings());

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
  page.setDefaultNavigationTimeout(cfg.readyMs);
  // The workbench is what counts, not every resource's load event: on a
  // busy machine code-server serves its scripts slowly.
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { waitUntil: "domcontentloaded", timeout: cfg.readyMs });
  await page.waitForSelector(".monaco-workbench", { timeout: cfg.readyMs });
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

// Opens a file of the workspace (train.py unless told) through Quick
// Open and waits until the editor shows `needle`.
async function openFixtureFile(name = "train.py", needle = "torch.compile(") {
  await page.locator(".monaco-workbench").click({ position: { x: 700, y: 400 } }).catch(() => {});
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  // By its path: Quick Open resolves that without waiting for its file
  // search, which a loaded machine makes slow.
  await input.fill(path.join(ws, name));
  // Rows of recently opened files show before the filter applies: pick
  // the file's own. The first search of the workspace starts its file
  // search, slow on a busy machine.
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ timeout: cfg.readyMs }).catch(async (err) => {
    await shot("vscode-open-failed.png");
    throw err;
  });
  await row.click();
  await page.waitForFunction(
    (needle) => [...document.querySelectorAll(".editor-instance .view-lines")].some((v) => v.textContent.replace(/\u00a0/g, " ").includes(needle)),
    needle,
    { timeout: 30000 },
  ).catch(async (err) => {
    await shot("vscode-open-failed.png");
    throw err;
  });
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

// Puts the cursor on `word` in the first line of the open file (train.py
// unless told) that contains `context`, through Go to Line (a click can
// land on a hover or a widget).
async function gotoText(context, word, file = "train.py") {
  const lines = fs.readFileSync(path.join(ws, file), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(context));
  assert.ok(i >= 0, `no line with ${context} in ${file}`);
  await goToLine(i + 1, lines[i].indexOf(context) + context.indexOf(word) + 2);
}

// Puts the cursor at a 1-based line and column of the active editor
// through Go to Line.
async function goToLine(line, col) {
  const input = page.locator(".quick-input-widget input.input");
  // A quick input closes when it loses focus: a side bar view that
  // finishes rendering just then (the References of the test before) takes
  // it, and the input is gone before it is filled. Open it again then.
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("Control+G");
    try {
      await input.waitFor({ state: "visible", timeout: 15000 });
      await input.fill(`:${line}:${col}`, { timeout: 5000 });
      break;
    } catch (e) {
      if (attempt === 3) throw new Error(`Go to Line never took ${line}:${col} in three tries: ${e.message}`);
    }
  }
  await page.keyboard.press("Enter");
  await page.locator(".statusbar-item", { hasText: `Ln ${line}, Col ${col}` }).first().waitFor({ timeout: 10000 });
}

// Runs a command from the palette by its title (F1: the browser keeps
// Control+Shift+P for itself).
// `filter` is typed; the row matching `title` (a string or RegExp) is run.
// The palette is a quick input, which closes when a late view takes the
// focus (as in goToLine): it is opened again, three tries at most.
async function runCommand(filter, title = filter) {
  const input = page.locator(".quick-input-widget input.input");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ state: "visible", timeout: 15000 });
      await input.fill(`>${filter}`, { timeout: 5000 });
      await row.waitFor({ timeout: 15000 });
      // A click on a row that has gone runs nothing: safe to try again.
      await row.click({ timeout: 5000 });
      return;
    } catch (e) {
      if (attempt === 3) throw new Error(`the palette never ran ${title} for ${filter} in three tries: ${e.message}`);
    }
  }
}

async function closeAllEditors() {
  await page.keyboard.press("Escape");
  await runCommand("View: Close All Editors", /View: Close All Editors(?! in)/);
}

// The extension's status bar item.
const statusItem = () => page.locator('.statusbar-item[id*="torchlsp.status"]').first();

// Waits until the status bar item's text matches re; returns the text.
async function waitStatus(re, timeout = cfg.readyMs) {
  const end = Date.now() + timeout;
  let text = "";
  while (Date.now() < end) {
    text = (await statusItem().innerText().catch(() => "")).trim();
    if (re.test(text)) return text;
    await page.waitForTimeout(250);
  }
  throw new Error(`waited ${timeout} ms: status bar item never matched ${re}; last: "${text}"${outputTail()}`);
}

// Waits for a notification toast whose text matches re.
async function waitToast(re, timeout = 30000) {
  const toast = page.locator(".notifications-toasts .notification-toast", { hasText: re }).first();
  await toast.waitFor({ timeout });
  return toast.innerText();
}

test("code-server opens the fixture and the status bar shows the toml's default target", async () => {
  await openFixtureFile();
  // The user set no default target: the trusted torchlsp.toml's decides.
  await waitStatus(/^fixture\b/);
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
  // TL001's own row: serve.py's TL011 also names CUDA graphs, and its file
  // may sort first.
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: /TL001/ }).first();
  await row.waitFor({ timeout: cfg.readyMs });
  const text = await row.innerText();
  assert.match(text, /cudagraph|thread/i);
  assert.match(text, /TL001/, `problem row: ${text}`);

  // Put the cursor on the flagged argument and ask for quick fixes.
  // Control+Period goes to the focused part: when the Problems view,
  // still rendering, takes the focus back from the editor, the editor's
  // cursor is set again and the key pressed again (three tries at most).
  const widget = page.locator(".action-widget");
  for (let attempt = 1; ; attempt++) {
    await page.mouse.move(5, 5);
    await gotoText('mode="reduce-overhead"', "reduce");
    await page.keyboard.press("Control+Period");
    try {
      await widget.waitFor({ state: "visible", timeout: attempt === 3 ? 20000 : 7000 });
      break;
    } catch (e) {
      if (attempt === 3) throw new Error(`no code action widget in three tries: ${e.message}`);
    }
  }
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

test("Problems view shows a CUDA-graph output kept across calls (TL011), with a clone quick fix", async () => {
  await page.keyboard.press("Escape");
  await openFixtureFile("serve.py", "outs.append(");
  if (!(await page.locator(".markers-panel").isVisible().catch(() => false))) await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: /TL011/ }).first();
  await row.waitFor({ timeout: cfg.readyMs });
  const text = await row.innerText();
  assert.match(text, /overwritten/i, `problem row: ${text}`);

  await page.mouse.move(5, 5);
  await gotoText("outs.append(step(x))", "step", "serve.py");
  await page.keyboard.press("Control+Period");
  const widget = page.locator(".action-widget");
  await widget.waitFor({ state: "visible", timeout: 20000 });
  await page.waitForFunction(() => /Clone the output/.test(document.querySelector(".action-widget")?.textContent ?? ""), null, { timeout: 20000 }).catch(() => {});
  const actions = await widget.innerText();
  assert.match(actions, /Clone the output/, `quick fixes: ${actions}`);
  await page.keyboard.press("Escape");
  // The tests that follow work in train.py.
  await openFixtureFile();
});

// The newest report.md under the workspace's repro folder, or "".
function newestReport() {
  const dir = path.join(ws, ".torchlsp", "repros");
  if (!fs.existsSync(dir)) return "";
  const runs = fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, "report.md"))).sort();
  return runs.length > 0 ? path.join(dir, runs[runs.length - 1], "report.md") : "";
}

// The report.md files under the workspace's repro folder, oldest first.
function reports() {
  const dir = path.join(ws, ".torchlsp", "repros");
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).sort().map((d) => path.join(dir, d, "report.md")).filter((f) => fs.existsSync(f));
}

test("Run Threaded Repro Here on every target renders each target's report", async () => {
  // Room for the reports, then the cursor on the compile call and the command.
  await runCommand("View: Hide Panel", /View: (Close|Hide) Panel/);
  await runCommand("View: Hide Primary Side Bar", /View: (Close|Hide) Primary Side Bar/);
  await gotoText("torch.compile(", "compile");
  await runCommand("TorchLSP: Run Threaded Repro Here");
  const input = page.locator(".quick-input-widget input.input");
  // Several targets, from the toml and the user's settings: the extension asks which.
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.filter({ hasText: "every target" }).first().waitFor({ timeout: 15000 });
  const offered = (await rows.allInnerTexts()).join(" | ");
  assert.match(offered, /fixture/, `choices: ${offered}`);
  assert.match(offered, /debian/, `choices: ${offered}`);
  await input.fill("every target");
  await rows.filter({ hasText: "every target" }).first().waitFor({ timeout: 5000 });
  await page.keyboard.press("Enter");

  await waitToast(/threaded repro/i, 15000);

  // Each target's report opens as a rendered markdown preview.
  const tabs = page.locator(".tabs-container .tab", { hasText: /Preview report\.md/ });
  const end = Date.now() + cfg.readyMs * 2;
  while ((await tabs.count()) < 2 && Date.now() < end) await page.waitForTimeout(500);
  assert.equal(await tabs.count(), 2, `report previews: ${(await page.locator(".tabs-container .tab").allInnerTexts()).join(", ")}`);
  const written = reports().map((f) => fs.readFileSync(f, "utf8"));
  assert.equal(written.length, 2, "want a report for each target");
  const debian = written.find((md) => /repro on `debian`/.test(md));
  assert.ok(debian, "no report for debian");
  assert.ok(written.some((md) => /repro on `fixture`/.test(md)), "no report for fixture");
  assert.match(debian, /AssertionError/);
  // The fixture torch has no torch.cuda: its report says so in one
  // sentence instead of a table of failed variants.
  const fixture = written.find((md) => /repro on `fixture`/.test(md));
  assert.match(fixture, /Nothing ran: .* is not a working PyTorch/);
  assert.doesNotMatch(fixture, /^\| /m, "the fixture's report has a table");
  // The previews render in webviews: wait for debian's table (or the
  // fixture's sentence, whichever preview is in front), then take the picture.
  const frame = page.frameLocator("iframe.webview.ready").last().frameLocator("iframe#active-frame");
  await frame.locator("table, p:has-text('Nothing ran')").first().waitFor({ timeout: 30000 });
  // The reports are shown once each: no untitled copy of their markdown.
  const untitled = await page.locator(".tabs-container .tab", { hasText: /^Untitled/ }).count();
  assert.equal(untitled, 0, "a report's markdown also opened as an untitled document");
  await tabs.filter({ hasText: /report/ }).first().click();
  await page.waitForTimeout(800);
  await shot("vscode-repro.png");
  await closeAllEditors();
});

test("Doctor renders its table as a markdown preview", async () => {
  await runCommand("TorchLSP: Doctor");
  const tab = page.locator(".tabs-container .tab", { hasText: /Preview torchlsp\.doctor/ }).first();
  await tab.waitFor({ timeout: 90000 });
  const frame = page.frameLocator("iframe.webview.ready").last().frameLocator("iframe#active-frame");
  await frame.locator("table").first().waitFor({ timeout: 30000 });
  const table = await frame.locator("table").first().innerText();
  assert.match(table, /check/, `doctor table: ${table}`);
  assert.match(table, /interpreter/, `doctor table: ${table}`);
  await closeAllEditors();
});

test("a changed torchlsp.toml loses its trust: local answers and the status bar says so", async () => {
  await openFixtureFile();
  fs.appendFileSync(path.join(ws, "torchlsp.toml"), "# edited after it was trusted\n");
  await waitToast(/changed since you trusted it/);
  const text = await waitStatus(/^local\b/, 60000);
  const tooltip = await statusItem().getAttribute("aria-label");
  assert.ok(text.startsWith("local"), `status: ${text} (${tooltip})`);
  await shot("vscode-untrusted.png");
});

test("TorchLSP: Trust shows the file and what it runs, then applies it without a restart", async () => {
  await runCommand("TorchLSP: Trust Workspace torchlsp.toml");
  const dialog = page.locator(".monaco-dialog-box").first();
  await dialog.waitFor({ timeout: 15000 });
  const said = await dialog.innerText();
  assert.match(said, /torchlsp\.toml/, `dialog: ${said}`);
  assert.ok(said.includes(`fixture: env PYTHONPATH=… ${cfg.python}`), `dialog: ${said}`);
  assert.match(said, /default target: fixture/, `dialog: ${said}`);
  // The file itself is open beside, to be read.
  await page.locator(".tabs-container .tab", { hasText: "torchlsp.toml" }).first().waitFor({ timeout: 10000 });
  await shot("vscode-trust.png");
  await dialog.locator(".monaco-button", { hasText: /^Trust$/ }).click();
  await waitToast(/trusted .*torchlsp\.toml/);
  await waitStatus(/^fixture\b/, 60000);
  await closeAllEditors();
});

test("Select Target offers every layer's targets and the status bar follows", async () => {
  await openFixtureFile();
  for (const target of ["debian", "fixture"]) {
    await runCommand("TorchLSP: Select Target");
    const rows = page.locator(".quick-input-list .monaco-list-row");
    await rows.first().waitFor({ timeout: 15000 });
    const offered = (await rows.allInnerTexts()).join(" | ");
    for (const want of ["local", "debian", "fixture"]) assert.match(offered, new RegExp(want), `choices: ${offered}`);
    await page.locator(".quick-input-widget input.input").fill(target);
    await rows.filter({ hasText: target }).first().waitFor({ timeout: 5000 });
    await page.keyboard.press("Enter");
    await waitStatus(new RegExp(`^${target}\\b`), 60000);
  }
});

test("go to definition opens the mirror read-only", async () => {
  await gotoText("torch.compile(", "compile");
  await page.keyboard.press("F12");
  const tab = page.locator(".tabs-container .tab.active", { hasText: "__init__.py" }).first();
  await tab.waitFor({ timeout: 30000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll(".editor-instance .view-lines")].some((v) => /def compile/.test(v.textContent.replace(/\u00a0/g, " "))),
    null,
    { timeout: 15000 },
  ).catch(async (err) => {
    await shot("vscode-mirror-failed.png");
    throw err;
  });
  await page.keyboard.type("x");
  const message = page.locator(".monaco-editor-overlaymessage", { hasText: /read-only/i }).first();
  await message.waitFor({ timeout: 10000 });
  assert.equal(await page.locator(".tabs-container .tab.active.dirty").count(), 0, "typing changed the mirror");
  await shot("vscode-mirror.png");
  await closeAllEditors();
});

// A real traceback from the fixture target: a workspace script that calls
// into the fixture torch, which fails in get_obj (cudagraph_trees.py:11).
async function fixtureTraceback() {
  const script = path.join(ws, "crash.py");
  fs.writeFileSync(script, 'import torch._inductor.cudagraph_trees as trees\n\n\ntrees.get_obj(trees.local, "tree_manager_containers")\n');
  const out = await run(cfg.python, [script], { env: { ...childEnv, PYTHONPATH: cfg.pythonpath } }).then(
    () => assert.fail("crash.py did not fail"),
    (err) => err.stderr,
  );
  assert.match(out, /cudagraph_trees\.py", line 11, in get_obj/, `crash.py printed: ${out}`);
  return { out, script };
}

// Opens a workspace file through Quick Open by its absolute path, which
// Quick Open resolves without waiting for its file search.
async function openByName(name, contains) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  await input.fill(path.join(ws, name));
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ timeout: 60000 });
  await row.click();
  await page.waitForFunction(
    (contains) => [...document.querySelectorAll(".editor-instance .view-lines")].some((v) => v.textContent.replace(/\u00a0/g, " ").includes(contains)),
    contains,
    { timeout: 30000 },
  );
}

test("a traceback in a .log file links into the mirror: ctrl+click opens it at the line", async () => {
  const { out } = await fixtureTraceback();
  fs.writeFileSync(path.join(ws, "run.log"), `epoch 3 step 120 loss 0.51\n${out}`);
  await openByName("run.log", "Traceback (most recent call last)");
  // The server's links arrive once it answers documentLink. The log's
  // highlighting splits the path into several spans, each carrying the
  // link's class: take the last span of the link on torch's frame line.
  const frameLine = page.locator(".editor-instance .view-lines .view-line", { hasText: "cudagraph_trees.py" }).first();
  const link = frameLine.locator(".detected-link").last();
  await link.waitFor({ timeout: cfg.readyMs }).catch(async (err) => {
    await shot("vscode-traceback-failed.png");
    throw err;
  });
  const box = await link.boundingBox();
  const x = box.x + Math.min(box.width / 2, 200);
  const y = box.y + box.height / 2;
  // Hovering shows the link's tooltip: the target and the mirror's torch.
  await page.mouse.move(x, y + 100);
  await page.mouse.move(x, y, { steps: 4 });
  const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: /mirror/ }).first();
  await hover.waitFor({ timeout: 15000 });
  const tooltip = await hover.innerText();
  assert.match(tooltip, /torch 2\.11\.0 on fixture \(mirror/, `tooltip: ${tooltip}`);
  await shot("vscode-traceback.png");
  await page.keyboard.down("Control");
  await page.mouse.click(x, y);
  await page.keyboard.up("Control");
  const tab = page.locator(".tabs-container .tab.active", { hasText: "cudagraph_trees.py" }).first();
  await tab.waitFor({ timeout: 30000 });
  await page.locator(".statusbar-item", { hasText: /Ln 11, Col \d+/ }).first().waitFor({ timeout: 15000 });
  await page.waitForFunction(
    () => [...document.querySelectorAll(".editor-instance .view-lines")].some((v) => v.textContent.replace(/\u00a0/g, " ").includes("assert torch._C._is_key_in_tls(attr_name)")),
    null,
    { timeout: 15000 },
  );
  // The mirror's copy, not the fixture's own file: it is read-only.
  await shot("vscode-traceback-mirror.png");
  await page.keyboard.type("x");
  await page.locator(".monaco-editor-overlaymessage", { hasText: /read-only/i }).first().waitFor({ timeout: 10000 });
  assert.equal(await page.locator(".tabs-container .tab.active.dirty").count(), 0, "typing changed the file a link opened");
  await closeAllEditors();
});

test("a target path printed in the terminal opens the mirror at the line", async () => {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Escape");
  // The top row is the command itself ("… (With Profile)" and "… in Editor Area" sort after it).
  await runCommand("Terminal: Create New Terminal");
  const rows = page.locator(".terminal-wrapper.active .xterm-rows");
  await rows.waitFor({ timeout: 30000 });
  await page.keyboard.type(`cat ${JSON.stringify(path.join(ws, "run.log"))}`);
  await page.keyboard.press("Enter");
  const needle = "cudagraph_trees.py";
  await page.waitForFunction((needle) => document.querySelector(".terminal-wrapper.active .xterm-rows")?.textContent.includes(needle), needle, { timeout: 30000 });
  // The terminal's line with the frame: hover its path, then Ctrl+click.
  const box = await page.evaluate((needle) => {
    for (const row of document.querySelectorAll(".terminal-wrapper.active .xterm-rows > div")) {
      const at = row.textContent.indexOf(needle);
      if (at < 0 || !row.textContent.includes("line 11")) continue;
      // The screen place of the needle's characters, through the row's text nodes.
      const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
      let offset = 0;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const len = node.textContent.length;
        if (at < offset + len) {
          const range = document.createRange();
          range.setStart(node, at - offset);
          range.setEnd(node, Math.min(len, at - offset + 4));
          const r = range.getBoundingClientRect();
          return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
        }
        offset += len;
      }
    }
    return null;
  }, needle);
  assert.ok(box, "no frame line in the terminal");
  // The terminal asks for a line's links when the mouse comes over it, and
  // the server answers asynchronously: hover again until the link's tooltip
  // shows, bounded by the ready timeout.
  const tip = page.locator(".monaco-hover:not(.hidden), .xterm-hover, .terminal-hover-widget", { hasText: /mirror/ }).first();
  const end = Date.now() + cfg.readyMs;
  for (;;) {
    await page.mouse.move(box.x, box.y + 60);
    await page.mouse.move(box.x, box.y, { steps: 4 });
    try {
      await tip.waitFor({ timeout: 8000 });
      break;
    } catch (err) {
      if (Date.now() > end) {
        await shot("vscode-terminal-link-failed.png");
        throw err;
      }
    }
  }
  await shot("vscode-terminal-link.png");
  await page.keyboard.down("Control");
  await page.mouse.click(box.x, box.y);
  await page.keyboard.up("Control");
  const tab = page.locator(".tabs-container .tab.active", { hasText: "cudagraph_trees.py" }).first();
  await tab.waitFor({ timeout: 30000 });
  await page.locator(".statusbar-item", { hasText: /Ln 11, Col \d+/ }).first().waitFor({ timeout: 15000 });
  await page.keyboard.type("x");
  await page.locator(".monaco-editor-overlaymessage", { hasText: /read-only/i }).first().waitFor({ timeout: 10000 });
  await runCommand("Terminal: Kill All Terminals", /Terminal: Kill All Terminals/);
  await closeAllEditors();
});

test("Map Traceback puts the exception on the script's line, with torch's frame beside it", async () => {
  await openByName("run.log", "Traceback (most recent call last)");
  await runCommand("TorchLSP: Map Traceback to the Mirror");
  // The server opens the innermost frame of the user's code, and the
  // exception shows there.
  await page.locator(".tabs-container .tab.active", { hasText: "crash.py" }).first().waitFor({ timeout: cfg.readyMs });
  await page.keyboard.press("Control+Shift+M");
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: /AttributeError/ }).first();
  await row.waitFor({ timeout: 60000 });
  const text = await row.innerText();
  assert.match(text, /TL210/, `problem row: ${text}`);
  assert.match(text, /cudagraph_trees\.py:11/, `problem row: ${text}`);
  await shot("vscode-traceback-problem.png");
  await closeAllEditors();
});

// Opens a workspace file (of `dir`, the workspace unless told) by its
// path through Quick Open (which resolves a path without waiting for its
// file search) and waits for text of it on screen.
async function openWorkspaceFile(name, shows, dir = ws) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: 15000 });
  await input.fill(path.join(dir, name));
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ timeout: cfg.readyMs });
  await row.click();
  await waitEditorText(shows);
}

// Waits until an editor shows text.
async function waitEditorText(text, timeout = 30000) {
  await page.waitForFunction(
    (text) => [...document.querySelectorAll(".editor-instance .view-lines")].some((v) => v.textContent.replace(/\u00a0/g, " ").includes(text)),
    text,
    { timeout },
  );
}

// Puts the cursor on `word` in the first line of `file` (read from disk:
// a workspace file, or the fixture torch a mirror copies) holding
// `context`, through Go to Line.
async function gotoIn(file, context, word) {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(context));
  assert.ok(i >= 0, `no line with ${context} in ${file}`);
  await goToLine(i + 1, lines[i].indexOf(context) + context.indexOf(word) + 2);
}

// The rows of the side bar's tree (References, Call Hierarchy), once
// every text in `want` shows among them, bounded by the ready timeout.
async function sideBarRows(want) {
  const rows = page.locator(".part.sidebar .monaco-list-row");
  const end = Date.now() + cfg.readyMs;
  let texts = [];
  while (Date.now() < end) {
    texts = await rows.allInnerTexts().catch(() => []);
    if (want.every((w) => texts.some((t) => t.includes(w)))) return texts;
    await page.waitForTimeout(250);
  }
  throw new Error(`the side bar never listed ${want.join(", ")}; rows: ${texts.join(" | ")}`);
}

const cudagraphsPy = () => path.join(ws, "cudagraphs.py");
const treesPy = () => path.join(cfg.pythonpath, "torch", "_inductor", "cudagraph_trees.py");

test("Find All References from a workspace file lists the places in torch", async () => {
  await openWorkspaceFile("cudagraphs.py", "get_container(0)");
  await gotoIn(cudagraphsPy(), "cudagraph_trees.get_container(0)", "get_container");
  await runCommand("References: Find All References");
  const rows = await sideBarRows(["cudagraph_trees.py", "compile_fx.py", "cudagraphs.py"]);
  await shot("vscode-references.png");
  // torch's files are the mirror's (seen through the site, as definitions are).
  const torchRows = rows.filter((t) => /^(cudagraph_trees|compile_fx)\.py/.test(t));
  // Through the site when the site was built from the mirror that answers,
  // else the mirror's own path (a target re-mirrored after its site was
  // built, as the fixture is when its files changed since the last run).
  // torchlsp's cache is under XDG_CACHE_HOME when that is set, else
  // ~/.cache; VS Code shows a path under the home directory with "~".
  const cacheRoot = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "torchlsp") + path.sep;
  const shown = [cacheRoot];
  if (cacheRoot.startsWith(os.homedir() + path.sep)) shown.push("~" + cacheRoot.slice(os.homedir().length));
  assert.ok(
    torchRows.length === 2 && torchRows.every((t) => shown.some((root) => t.includes(root))),
    `rows under ${shown.join(" or ")}: ${rows.join(" | ")}`,
  );
});

test("Show Call Hierarchy lists the callers in torch and the workspace", async () => {
  await gotoIn(cudagraphsPy(), "cudagraph_trees.get_container(0)", "get_container");
  await runCommand("Calls: Show Call Hierarchy");
  await sideBarRows(["get_container", "get_manager", "cudagraphify", "fresh_start"]);
  await shot("vscode-call-hierarchy.png");
});

test("Go to Symbol in Workspace opens torch's function in the mirror, and the Outline lists the file", async () => {
  await runCommand("Go to Symbol in Workspace");
  const input = page.locator(".quick-input-widget input.input");
  await input.fill("#get_obj");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "torch._inductor.cudagraph_trees" }).first();
  await row.waitFor({ timeout: cfg.readyMs });
  await shot("vscode-workspace-symbol.png");
  await row.click();
  await page.locator(".tabs-container .tab.active", { hasText: "cudagraph_trees.py" }).first().waitFor({ timeout: 30000 });
  await waitEditorText("def get_obj(");

  await runCommand("Go to Symbol in Editor");
  const names = ["get_obj", "get_container", "get_manager", "reset_cudagraph_trees", "TreeManagerContainer", "get_tree_manager"];
  const rows = page.locator(".quick-input-list .monaco-list-row");
  const end = Date.now() + 30000;
  let texts = [];
  while (Date.now() < end) {
    texts = await rows.allInnerTexts();
    if (names.every((n) => texts.some((t) => t.includes(n)))) break;
    await page.waitForTimeout(250);
  }
  await shot("vscode-outline.png");
  for (const n of names) assert.ok(texts.some((t) => t.includes(n)), `outline lacks ${n}: ${texts.join(" | ")}`);
  await page.keyboard.press("Escape");
});

test("inside the mirror, Find All References stays in torch, in one copy of the file", async () => {
  await gotoIn(treesPy(), "def get_obj(", "get_obj");
  await runCommand("References: Find All References");
  // The file's row, then its four lines that name get_obj.
  const rows = await sideBarRows(["cudagraph_trees.py", "def get_obj(", "lock = get_obj("]);
  const lines = rows.filter((t) => t.includes("get_obj("));
  assert.equal(lines.length, 4, `rows: ${rows.join(" | ")}`);
  assert.ok(!rows.some((t) => t.startsWith("compile_fx.py") || t.startsWith("cudagraphs.py")), `rows: ${rows.join(" | ")}`);
  await shot("vscode-references-mirror.png");
  // Whichever way the file was reached, the editor holds it once.
  const tabs = await page.locator(".tabs-container .tab", { hasText: "cudagraph_trees.py" }).count();
  assert.equal(tabs, 1, "two tabs of cudagraph_trees.py");
  await closeAllEditors();
});

// The workspace settings the extension wrote, as VS Code keeps them.
function workspaceSettings() {
  try {
    return JSON.parse(fs.readFileSync(path.join(ws, ".vscode", "settings.json"), "utf8"));
  } catch {
    return {};
  }
}

// The extension's output channel (the server's log and stderr), as
// code-server writes it under the user data's logs.
function outputChannel() {
  const found = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/-TorchLSP\.log$/.test(e.name)) found.push(p);
    }
  };
  try {
    walk(path.join(dirs.userData, "logs"));
  } catch {}
  return found.map((f) => fs.readFileSync(f, "utf8")).join("\n");
}

// The end of the output channel, for the message of a wait that timed out.
function outputTail() {
  const text = outputChannel();
  return text ? `\n--- TorchLSP output channel (end) ---\n${text.slice(-6000)}` : "\n(no TorchLSP output channel log found)";
}

async function waitSettings(pred, what, timeout = 60000) {
  const end = Date.now() + timeout;
  let last = {};
  while (Date.now() < end) {
    last = workspaceSettings();
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`waited ${timeout} ms: ${what}; .vscode/settings.json: ${JSON.stringify(last)}${outputTail()}`);
}

// Waits until the output channel has a line matching re.
async function waitOutput(re, what, timeout = cfg.readyMs) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    if (re.test(outputChannel())) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`waited ${timeout} ms for ${what} (${re} in the TorchLSP output channel)${outputTail()}`);
}

// Whether a site path is the named target's: sites live at
// <cache>/site/<target>-<identity>.
const siteOf = (target, p) => typeof p === "string" && path.basename(p).startsWith(`${target}-`);

// The three settings hold the user's entry and then exactly `site` (or,
// with site undefined, nothing more).
function settingsHold(s, site) {
  const want = site === undefined ? undefined : [site];
  return JSON.stringify(s["python.analysis.extraPaths"]) === JSON.stringify([ownExtraPath, ...(want ?? [])]) &&
    JSON.stringify(s["basedpyright.analysis.extraPaths"]) === JSON.stringify(want) &&
    JSON.stringify(s["pylsp.plugins.jedi.extra_paths"]) === JSON.stringify(want);
}

// Selects a target through the palette and waits for the status bar to show it.
async function selectTarget(target) {
  await runCommand("TorchLSP: Select Target");
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await page.locator(".quick-input-widget input.input").fill(target);
  await rows.filter({ hasText: target }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press("Enter");
  await waitStatus(new RegExp(`^${target}\\b`), 60000);
}

// Whether the server binary speaks the site contract (torchlsp.site).
async function serverHasSite() {
  const client = new LspClient(cfg.bin, ["serve", "--stdio"], { cwd: ws, env: childEnv });
  try {
    const r = await client.request("initialize", { processId: process.pid, rootUri: null, capabilities: {} }, 20000);
    return (r?.capabilities?.executeCommandProvider?.commands ?? []).includes("torchlsp.site");
  } finally {
    await client.close();
  }
}

test("the site goes into the Python servers' settings, and pyright resolves torch.compile into it", async () => {
  assert.ok(fs.existsSync(pyrightLangserver()), `pyright is not installed: ${pyrightLangserver()}`);
  let site;
  if (!(await serverHasSite())) {
    // This torchlsp predates the site contract: the extension talks to a
    // server of the test's own that speaks it, with the fixture site.
    console.log(`# ${cfg.bin} has no torchlsp.site: using editors/e2e/site_server.py`);
    const wrapper = path.join(tmp, "site-server.sh");
    fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(cfg.python)} ${JSON.stringify(path.join(here, "site_server.py"))} fixture=${JSON.stringify(cfg.pythonpath)} debian= "$@"\n`, { mode: 0o755 });
    writeUserSettings(torchlspSettings({ "torchlsp.path": wrapper }));
    site = cfg.pythonpath;
  }
  // The active target is fixture (the last one Select Target picked): its
  // site, and no other target's, is what the settings must come to hold.
  await waitStatus(/^fixture\b/, 10000);
  const siteSet = (s) => {
    const at = s["python.analysis.extraPaths"]?.[1];
    return (site === undefined ? siteOf("fixture", at) : at === site) && settingsHold(s, at);
  };
  const written = await waitSettings(siteSet, "the active target fixture's site in the three settings", cfg.readyMs);
  site = written["python.analysis.extraPaths"][1];
  assert.ok(fs.existsSync(path.join(site, "torch")), `no torch in the site ${site}`);
  assert.deepEqual(written["basedpyright.analysis.extraPaths"], [site]);
  assert.deepEqual(written["pylsp.plugins.jedi.extra_paths"], [site]);
  if (cfg.shots) fs.writeFileSync(path.join(tmp, "captured-settings.json"), JSON.stringify(written, null, 2));

  // pyright, started with exactly those settings, resolves into the site.
  const { locations, diagnostics, stderr } = await pyrightDefinition({ settings: nestSettings(written), ws, file: path.join(ws, "train.py"), needle: "torch.compile(", offset: "torch.".length });
  assert.ok(locations.length > 0, `pyright found no definition of torch.compile with ${JSON.stringify(written)}; its diagnostics of train.py: ${JSON.stringify(diagnostics)}; its stderr:\n${stderr}`);
  const file = new URL(locations[0].uri).pathname;
  // The site's packages are links into the mirrors: the file pyright names
  // is the site's torch/__init__.py, by whichever path.
  assert.equal(fs.realpathSync(file), fs.realpathSync(path.join(site, "torch", "__init__.py")), `definition in ${file}, not in ${site}`);
  const line = fs.readFileSync(file, "utf8").split("\n")[locations[0].range.start.line];
  assert.match(line, /def compile/);
  // And without them it does not.
  const { locations: without } = await pyrightDefinition({ settings: nestSettings({ "python.analysis.extraPaths": [ownExtraPath] }), ws, file: path.join(ws, "train.py"), needle: "torch.compile(", offset: "torch.".length });
  const siteInit = fs.realpathSync(path.join(site, "torch", "__init__.py"));
  assert.ok(!without.some((l) => fs.realpathSync(new URL(l.uri).pathname) === siteInit), "pyright found the site without the settings");

  // Turned off, nothing of the extension's stays; the user's entry does.
  const wrapped = site === cfg.pythonpath ? { "torchlsp.path": path.join(tmp, "site-server.sh") } : {};
  writeUserSettings(torchlspSettings({ ...wrapped, "torchlsp.site.enable": false }));
  // The three settings are written one at a time: wait for all three.
  const off = await waitSettings(
    (s) =>
      !JSON.stringify(s).includes(JSON.stringify(site)) &&
      JSON.stringify(s["python.analysis.extraPaths"]) === JSON.stringify([ownExtraPath]) &&
      s["basedpyright.analysis.extraPaths"] === undefined &&
      s["pylsp.plugins.jedi.extra_paths"] === undefined,
    "with torchlsp.site.enable off, only the user's own entry in the three settings",
  );
  assert.deepEqual(off["python.analysis.extraPaths"], [ownExtraPath]);
  assert.equal(off["basedpyright.analysis.extraPaths"], undefined);
  assert.equal(off["pylsp.plugins.jedi.extra_paths"], undefined);
  writeUserSettings(torchlspSettings(wrapped));
  await waitSettings(siteSet, "the site did not come back with torchlsp.site.enable on");

  // A target change takes out exactly what was added, and the new target's
  // site takes its place. The old one is out of the settings from then on:
  // whenever they change, they hold the user's entry, then nothing or
  // debian's site.
  await openFixtureFile();
  await selectTarget("debian");
  const changed = await waitSettings((s) => settingsHold(s, s["python.analysis.extraPaths"]?.[1]) && siteOf("debian", s["python.analysis.extraPaths"]?.[1]),
    "the active target debian's site in the three settings", cfg.readyMs);
  assert.ok(!JSON.stringify(changed).includes(JSON.stringify(site)), "the old site stayed after the target change");
  if (site === cfg.pythonpath) return;
  await selectTarget("fixture");
  await waitSettings((s) => settingsHold(s, site), `fixture's site ${site} back in the three settings`, cfg.readyMs);
});

test("a site whose build ends after a switch to another target never reaches the settings", async (t) => {
  if (!(await serverHasSite())) {
    t.skip("the server predates torchlsp.site");
    return;
  }
  // The slow target's interpreter waits, while a hold file is there, until
  // a release file is: whatever the target's site build needs from it
  // waits too. Same interpreter and torch as fixture otherwise.
  const gate = path.join(tmp, "slow-gate");
  fs.mkdirSync(gate, { recursive: true });
  const slowPython = path.join(gate, "python3");
  fs.writeFileSync(slowPython, [
    "#!/bin/sh",
    `gate=${JSON.stringify(gate)}`,
    'if [ -e "$gate/hold" ]; then',
    '  : > "$gate/arrived"',
    '  while [ ! -e "$gate/release" ]; do sleep 0.1; done',
    "fi",
    `exec ${JSON.stringify(cfg.python)} "$@"`,
    "",
  ].join("\n"), { mode: 0o755 });
  fs.writeFileSync(path.join(gate, "hold"), "");
  const fixtureSite = workspaceSettings()["python.analysis.extraPaths"]?.[1];
  assert.ok(siteOf("fixture", fixtureSite), `fixture's site is not in the settings: ${JSON.stringify(workspaceSettings())}`);
  writeUserSettings(torchlspSettings({
    "torchlsp.targets": {
      debian: { python: cfg.python, packages: ["torch"] },
      slow: { python: slowPython, env: { PYTHONPATH: cfg.pythonpath }, packages: ["torch"] },
    },
  }));
  try {
    await openFixtureFile();
    await selectTarget("slow");
    // The switch took fixture's site out at once.
    await waitSettings((s) => settingsHold(s, undefined), "fixture's site out of the settings after the switch to slow");
    const end = Date.now() + cfg.readyMs;
    while (!fs.existsSync(path.join(gate, "arrived"))) {
      if (Date.now() > end) throw new Error(`waited ${cfg.readyMs} ms for the slow target's interpreter to start${outputTail()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // slow's site is being built, and waits: back to fixture.
    await selectTarget("fixture");
    await waitSettings((s) => settingsHold(s, fixtureSite), `fixture's site ${fixtureSite} back in the three settings`, cfg.readyMs);
    fs.writeFileSync(path.join(gate, "release"), "");
    // slow's site is built, and the server keeps it from the editor.
    await waitOutput(/the site of target slow is not handed to the editor: the default target is fixture now/, "the end of slow's site build");
    const settled = workspaceSettings();
    assert.ok(settingsHold(settled, fixtureSite), `after slow's site was built, the settings are ${JSON.stringify(settled)}; want fixture's site ${fixtureSite} only`);
  } finally {
    fs.writeFileSync(path.join(gate, "release"), "");
    writeUserSettings(torchlspSettings());
  }
});

// A real torch 2.6: Debian 13's python3-torch in LXC container 200, entered
// as users enter theirs (`pct exec 200 --`). scripts/editors-test.sh starts
// the container, asks it where its torch puts things and passes the answers
// in TORCHLSP_TORCH26_* (as for editors/nvim/test/torch26.lua); nothing of
// that torch is written down here. Without them the test is skipped.
const torch26 = {
  pct: process.env.TORCHLSP_TORCH26_PCT || "",
  python: env("TORCHLSP_TORCH26_PYTHON", "/usr/bin/python3"),
  version: process.env.TORCHLSP_TORCH26_VERSION || "",
  root: process.env.TORCHLSP_TORCH26_ROOT || "",
  compileLine: Number(process.env.TORCHLSP_TORCH26_COMPILE_LINE || 0),
  assertLine: Number(process.env.TORCHLSP_TORCH26_ASSERT_LINE || 0),
};
const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

test("torch 2.6 in container 200: a second workspace on ct200 hovers, goes to and diagnoses from the container's torch",
  { skip: torch26.pct ? false : "TORCHLSP_TORCH26_PCT is not set (scripts/editors-test.sh sets it from the container)" },
  async () => {
    for (const k of ["version", "root", "compileLine", "assertLine"]) assert.ok(torch26[k], `TORCHLSP_TORCH26_* lacks ${k}`);
    // The user's settings define the container's target (targets are
    // machine-scoped); the second workspace's own settings make it the default.
    const ws26 = path.join(tmp, "torch26");
    fs.cpSync(path.join(repo, "editors", "testdata", "torch26"), ws26, { recursive: true });
    // (Hovers open below the line, where the picture has room for them.)
    writeJSON(path.join(ws26, ".vscode", "settings.json"), { "torchlsp.defaultTarget": "ct200", "editor.hover.above": false });
    writeUserSettings(torchlspSettings({
      "torchlsp.targets": {
        debian: { python: cfg.python, packages: ["torch"] },
        ct200: { exec: [torch26.pct, "exec", "200", "--"], python: torch26.python },
      },
    }));
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws26)}`, { waitUntil: "domcontentloaded", timeout: cfg.readyMs });
    await page.waitForSelector(".monaco-workbench", { timeout: cfg.readyMs });
    const file = path.join(ws26, "threaded_compile.py");
    await openWorkspaceFile("threaded_compile.py", "torch.compile(", ws26);
    await waitStatus(/^ct200\b/);

    // Hover: the container's file and line, then its torch's version last.
    const defined = new RegExp(`Defined at\\s*${reEscape(torch26.root)}/__init__\\.py:${torch26.compileLine}\\s+on target\\s+ct200\\b`);
    const box = await wordBox("torch.compile(", "compile");
    assert.ok(box, "no torch.compile( on screen");
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    await page.mouse.click(x, y);
    const hover = page.locator(".monaco-hover:not(.hidden)");
    const end = Date.now() + cfg.readyMs;
    let text = "";
    // The first hovers can come before the container's torch is mirrored.
    while (Date.now() < end) {
      await page.mouse.move(x, y + 200);
      await page.mouse.move(x, y, { steps: 4 });
      try {
        await hover.filter({ hasText: defined }).first().waitFor({ timeout: 8000 });
        text = await hover.filter({ hasText: defined }).first().innerText();
        break;
      } catch {
        text = (await hover.allInnerTexts()).join("\n");
      }
    }
    // The signature takes the hover's height: scroll it to its end (the
    // source's place and the version) for the picture.
    const shown26 = hover.filter({ hasText: defined }).first();
    const hb = await shown26.boundingBox().catch(() => null);
    if (hb) {
      await page.mouse.move(hb.x + hb.width / 2, hb.y + hb.height / 2, { steps: 4 });
      await page.mouse.wheel(0, 1000);
      await page.waitForTimeout(400);
    }
    await shot("vscode-hover-torch26.png");
    assert.match(text, defined, `hover text: ${text}`);
    assert.ok(text.trimEnd().endsWith(`torch ${torch26.version}`), `the hover does not end with torch ${torch26.version}: ${text}`);

    // Definition: the mirror's torch/__init__.py, at the container's line.
    await page.mouse.move(5, 5);
    await gotoIn(file, "torch.compile(", "compile");
    await page.keyboard.press("F12");
    await page.locator(".tabs-container .tab.active", { hasText: "__init__.py" }).first().waitFor({ timeout: 30000 });
    await page.locator(".statusbar-item", { hasText: new RegExp(`Ln ${torch26.compileLine}, Col \\d+`) }).first().waitFor({ timeout: 15000 })
      .catch(async (err) => {
        await shot("vscode-torch26-definition-failed.png");
        throw err;
      });
    await waitEditorText("def compile(");
    // The breadcrumbs: the file's path, then the symbol at the cursor.
    let crumbs = [];
    const until = Date.now() + 15000;
    while (Date.now() < until) {
      crumbs = (await page.locator(".monaco-breadcrumbs").first().innerText().catch(() => "")).split("\n").map((c) => c.trim()).filter(Boolean);
      if (crumbs.at(-1) === "compile" && crumbs.includes("__init__.py")) break;
      await page.waitForTimeout(250);
    }
    const shown = crumbs.slice(0, crumbs.indexOf("__init__.py") + 1).join("/");
    // The mirror's file; or, once the extension has handed ct200's site to
    // the Python server (it asks for it: torchlsp.site), the same file seen
    // through that site, where both servers' definitions coincide. Which
    // one depends on whether the site was built before F12.
    assert.match(shown, /(^|\/)torchlsp\/(ct200\/[^/]+\/torch-[^/]+\/site|site\/ct200-[^/]+)\/torch\/__init__\.py$/, `the definition's breadcrumbs: ${crumbs.join(" > ")}`);
    // In torchlsp's cache (a path under the home directory may show as "~").
    const cacheRoot = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "torchlsp") + path.sep;
    const roots = [cacheRoot.slice(1)];
    if (cacheRoot.startsWith(os.homedir() + path.sep)) roots.push("~" + cacheRoot.slice(os.homedir().length));
    assert.ok(roots.some((r) => shown.startsWith(r)), `the definition's file ${shown} is not under ${roots.join(" or ")}`);
    assert.equal(crumbs.at(-1), "compile", `the definition's breadcrumbs: ${crumbs.join(" > ")}`);
    await closeAllEditors();

    // TL001, citing the container's line of cudagraph_trees.py.
    await openWorkspaceFile("threaded_compile.py", "torch.compile(", ws26);
    await page.keyboard.press("Control+Shift+M");
    const row = page.locator(".markers-panel .monaco-list-row", { hasText: /TL001/ }).first();
    await row.waitFor({ timeout: cfg.readyMs });
    const problem = await row.innerText();
    assert.match(problem, new RegExp(`torch/_inductor/cudagraph_trees\\.py:${torch26.assertLine}(?!\\d)`), `problem row: ${problem}`);
    assert.ok(problem.includes(`torch ${torch26.version}`), `problem row: ${problem}`);
  });
