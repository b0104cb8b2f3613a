// Starts pyright's language server (from npm) with given settings, exactly
// as an editor would hand them over (workspace/configuration), and asks it
// for the definition of a name in a file. The editor tests use it to check
// that the settings an editor package wrote make the user's main Python
// server resolve torch into the target's site.
//
//   node pyright-site.mjs SETTINGS.json WORKSPACE FILE NEEDLE [OFFSET]
//
// prints the definition's locations as JSON, asked once pyright published
// its diagnostics of FILE. PYRIGHT_DIR is where pyright was installed with
// npm (default /var/cache/torchlsp-pyright); its
// langserver.index.js is run with node itself, never through
// node_modules/.bin, where basedpyright's package puts a pyright-langserver
// of its own.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** pyright's language server script under an npm prefix. */
export function pyrightLangserver(dir = process.env.PYRIGHT_DIR || "/var/cache/torchlsp-pyright") {
  return path.join(dir, "node_modules", "pyright", "langserver.index.js");
}

/** A minimal LSP client over a child's stdio. */
export class LspClient {
  constructor(cmd, args, { cwd, env, onRequest } = {}) {
    this.child = spawn(cmd, args, { cwd, env: env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
    this.nextId = 1;
    this.pending = new Map();
    this.notifications = [];
    this.waiters = [];
    this.onRequest = onRequest ?? (() => null);
    this.stderr = "";
    this.buffer = Buffer.alloc(0);
    this.child.stdout.on("data", (chunk) => this.read(chunk));
    this.child.stderr.on("data", (chunk) => (this.stderr = (this.stderr + chunk).slice(-8000)));
    this.exited = new Promise((resolve) => this.child.on("exit", resolve));
    this.child.on("exit", (code) => {
      for (const { reject } of this.pending.values()) reject(new Error(`${cmd} exited (${code}): ${this.stderr}`));
      this.pending.clear();
    });
  }

  read(chunk) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const m = /Content-Length: *(\d+)/i.exec(this.buffer.subarray(0, end).toString("ascii"));
      const len = Number(m?.[1] ?? 0);
      if (this.buffer.length < end + 4 + len) return;
      const msg = JSON.parse(this.buffer.subarray(end + 4, end + 4 + len).toString("utf8"));
      this.buffer = this.buffer.subarray(end + 4 + len);
      this.dispatch(msg);
    }
  }

  dispatch(msg) {
    if (msg.method && msg.id !== undefined) {
      Promise.resolve(this.onRequest(msg.method, msg.params)).then((result) =>
        this.write({ jsonrpc: "2.0", id: msg.id, result: result ?? null }),
      );
    } else if (msg.method) {
      this.notifications.push(msg);
      for (const w of this.waiters.splice(0)) w();
    } else if (this.pending.has(msg.id)) {
      const { resolve, reject } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) reject(new Error(`${msg.error.code}: ${msg.error.message}`));
      else resolve(msg.result);
    }
  }

  write(msg) {
    const body = Buffer.from(JSON.stringify(msg), "utf8");
    this.child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "ascii"), body]));
  }

  request(method, params, timeoutMs = 30000) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.write({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method, params) {
    this.write({ jsonrpc: "2.0", method, params });
  }

  /** Waits for a notification that satisfies pred. */
  async waitNotification(pred, timeoutMs) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notifications.find(pred);
      if (found) return found;
      const left = end - Date.now();
      if (left <= 0) throw new Error("no such notification");
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  async close() {
    try {
      await this.request("shutdown", null, 5000);
      this.notify("exit", null);
    } catch {}
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** settings["a"]["b"] for section "a.b", as editors answer workspace/configuration. */
export function lookupSection(settings, section) {
  if (!section) return settings;
  let v = settings;
  for (const part of section.split(".")) {
    if (v === null || typeof v !== "object" || !(part in v)) return null;
    v = v[part];
  }
  return v;
}

/**
 * Turns VS Code's flat settings.json keys ("python.analysis.extraPaths")
 * into the nested object a language server is answered from.
 */
export function nestSettings(flat) {
  const out = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split(".");
    let t = out;
    for (const p of parts.slice(0, -1)) t = t[p] ??= {};
    t[parts[parts.length - 1]] = value;
  }
  return out;
}

/** The LSP position of `needle`'s last character group in text: line and UTF-16 column of its start. */
export function positionOf(text, needle, offsetInNeedle = 0) {
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, at + offsetInNeedle).split("\n");
  return { line: before.length - 1, character: before[before.length - 1].length };
}

/**
 * Starts pyright with `settings` (nested), opens `file` of `ws`, waits for
 * pyright's diagnostics of the file (its analysis of it is done: imports
 * resolved with those settings), then asks once for the definition of the
 * name `needle` points at (its start plus offset). Returns the locations,
 * the diagnostics pyright published and the end of its stderr; throws,
 * saying what it waited for, when pyright publishes nothing in time.
 */
export async function pyrightDefinition({ pyright = pyrightLangserver(), settings, ws, file, needle, offset = 0, timeoutMs = 90000 }) {
  const client = new LspClient(process.execPath, [pyright, "--stdio"], {
    cwd: ws,
    onRequest: (method, params) => {
      if (method === "workspace/configuration") return params.items.map((item) => lookupSection(settings, item.section));
      if (method === "workspace/workspaceFolders") return [{ uri: pathToFileURL(ws).toString(), name: path.basename(ws) }];
      return null;
    },
  });
  try {
    await client.request("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(ws).toString(),
      workspaceFolders: [{ uri: pathToFileURL(ws).toString(), name: path.basename(ws) }],
      capabilities: {
        workspace: { configuration: true, workspaceFolders: true, didChangeConfiguration: { dynamicRegistration: true } },
        textDocument: { definition: { linkSupport: false }, synchronization: {}, publishDiagnostics: {} },
      },
    }, timeoutMs);
    client.notify("initialized", {});
    client.notify("workspace/didChangeConfiguration", { settings: null });
    const text = fs.readFileSync(file, "utf8");
    const uri = pathToFileURL(file).toString();
    client.notify("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text } });
    const published = await client
      .waitNotification((m) => m.method === "textDocument/publishDiagnostics" && m.params?.uri === uri, timeoutMs)
      .catch(() => {
        throw new Error(`pyright published no diagnostics for ${file} in ${timeoutMs} ms (its analysis of the file never ended); its stderr:\n${client.stderr}`);
      });
    const position = positionOf(text, needle, offset);
    const r = await client.request("textDocument/definition", { textDocument: { uri }, position }, timeoutMs);
    const locations = (Array.isArray(r) ? r : r ? [r] : []).map((l) => ({ uri: l.uri ?? l.targetUri, range: l.range ?? l.targetSelectionRange }));
    return { locations, diagnostics: published.params.diagnostics ?? [], stderr: client.stderr };
  } finally {
    await client.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").toString()) {
  const [settingsFile, ws, file, needle, offset = "0"] = process.argv.slice(2);
  const raw = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
  const settings = Object.keys(raw).some((k) => k.includes(".")) ? nestSettings(raw) : raw;
  const { locations } = await pyrightDefinition({ settings, ws: path.resolve(ws), file: path.resolve(file), needle, offset: Number(offset) });
  console.log(JSON.stringify(locations, null, 2));
}
