// The workspace's torchlsp.toml as the editor sees it: where torchlsp keeps
// its files, whether the file is trusted as it is now (the server's trust
// records), and what it would make torchlsp run. Pure (node's crypto
// aside), so it is unit-tested under plain node.
import { createHash } from "crypto";
import * as path from "path";

/** The name of the per-workspace configuration file. */
export const workspaceFile = "torchlsp.toml";

/** Environment variables the directories depend on. */
export type Env = Record<string, string | undefined>;

// xdg returns $NAME when it is an absolute path, else HOME/fallback, as the
// server's config.DefaultDirs does.
function xdg(env: Env, name: string, home: string, fallback: string): string {
  const v = env[name];
  return v && path.isAbsolute(v) ? v : path.join(home, fallback);
}

/** $XDG_CACHE_HOME/torchlsp: the mirrors (read-only copies of the target's sources). */
export function cacheDir(env: Env, home: string): string {
  return path.join(xdg(env, "XDG_CACHE_HOME", home, ".cache"), "torchlsp");
}

/** $XDG_STATE_HOME/torchlsp: the trust records. */
export function stateDir(env: Env, home: string): string {
  return path.join(xdg(env, "XDG_STATE_HOME", home, ".local/state"), "torchlsp");
}

/** Whether a workspace file may be used: as torchlsp's own trust store decides. */
export type TrustState = "trusted" | "untrusted" | "changed";

/**
 * The trust state of a file with this content, given the text of
 * trusted.json (undefined when there is none). A damaged record file
 * trusts nothing, as in the server.
 */
export function trustState(file: string, content: Uint8Array | string, records: string | undefined): TrustState {
  let files: Record<string, unknown> = {};
  if (records !== undefined) {
    try {
      const parsed = JSON.parse(records) as { files?: Record<string, unknown> };
      files = parsed && typeof parsed.files === "object" && parsed.files !== null ? parsed.files : {};
    } catch {
      return "untrusted";
    }
  }
  const want = files[path.resolve(file)];
  if (typeof want !== "string") return "untrusted";
  const got = "sha256:" + createHash("sha256").update(content).digest("hex");
  return want === got ? "trusted" : "changed";
}

/** One target of a workspace file, as far as it decides what runs. */
export interface FileTarget {
  name: string;
  python: string;
  ssh?: string;
  jump?: string[];
  exec?: string[];
  envNames: string[];
}

/** What a workspace file would make torchlsp do. */
export interface FileSummary {
  default?: string;
  targets: FileTarget[];
}

/**
 * Reads the parts of a torchlsp.toml that decide what runs. It understands
 * the TOML torchlsp.toml is written in (tables, dotted keys, strings,
 * arrays, inline tables); the server's parser stays the judge of validity.
 */
export function summarize(text: string): FileSummary {
  const root = parseTOML(text);
  const out: FileSummary = { targets: [] };
  if (typeof root.default === "string") out.default = root.default;
  const targets = root.targets;
  if (isTable(targets)) {
    for (const [name, raw] of Object.entries(targets)) {
      if (!isTable(raw)) continue;
      const t: FileTarget = {
        name,
        python: typeof raw.python === "string" && raw.python !== "" ? raw.python : "python3",
        envNames: isTable(raw.env) ? Object.keys(raw.env).sort() : [],
      };
      if (typeof raw.ssh === "string") t.ssh = raw.ssh;
      if (isStrings(raw.jump)) t.jump = raw.jump;
      if (isStrings(raw.exec)) t.exec = raw.exec;
      out.targets.push(t);
    }
  }
  return out;
}

/** The command line a target starts, as a person would type it. */
export function commandLine(t: FileTarget): string {
  const words: string[] = [];
  if (t.ssh) {
    words.push("ssh");
    if (t.jump && t.jump.length > 0) words.push("-J", t.jump.join(","));
    words.push(t.ssh);
  }
  if (t.exec) words.push(...t.exec);
  if (t.envNames.length > 0) words.push("env", ...t.envNames.map((n) => `${n}=…`));
  words.push(t.python);
  return words.map(quoteWord).join(" ");
}

/** A short account of what trusting the file allows, one line a target. */
export function describeSummary(s: FileSummary): string[] {
  const lines = s.targets.map((t) => `${t.name}: ${commandLine(t)}`);
  if (s.default) lines.push(`default target: ${s.default}`);
  if (lines.length === 0) lines.push("no targets");
  return lines;
}

function quoteWord(w: string): string {
  return /^[\w@%+=:,./…-]+$/u.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

type Table = Record<string, unknown>;

function isTable(v: unknown): v is Table {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isStrings(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/** Parses TOML into plain objects; throws on what it cannot read. */
export function parseTOML(text: string): Table {
  const p = new TomlParser(text);
  return p.document();
}

class TomlParser {
  private i = 0;
  private readonly root: Table = {};

  constructor(private readonly s: string) {}

  document(): Table {
    let current = this.root;
    for (;;) {
      this.skipBlank(true);
      if (this.i >= this.s.length) return this.root;
      if (this.s[this.i] === "[") {
        const array = this.s.startsWith("[[", this.i);
        this.i += array ? 2 : 1;
        const keys = this.keyPath();
        this.expect(array ? "]]" : "]");
        current = array ? this.arrayTable(keys) : this.table(this.root, keys);
      } else {
        const keys = this.keyPath();
        this.expect("=");
        const value = this.value();
        this.assign(current, keys, value);
      }
      this.endOfLine();
    }
  }

  private table(from: Table, keys: string[]): Table {
    let t = from;
    for (const k of keys) {
      const next = t[k];
      if (next === undefined) t = t[k] = {};
      else if (isTable(next)) t = next;
      else if (Array.isArray(next) && isTable(next[next.length - 1])) t = next[next.length - 1] as Table;
      else throw this.error(`key ${k} is not a table`);
    }
    return t;
  }

  private arrayTable(keys: string[]): Table {
    const parent = this.table(this.root, keys.slice(0, -1));
    const last = keys[keys.length - 1];
    const list = (parent[last] ??= []) as unknown[];
    if (!Array.isArray(list)) throw this.error(`key ${last} is not an array of tables`);
    const t: Table = {};
    list.push(t);
    return t;
  }

  private assign(t: Table, keys: string[], value: unknown): void {
    const parent = this.table(t, keys.slice(0, -1));
    parent[keys[keys.length - 1]] = value;
  }

  private keyPath(): string[] {
    const keys = [this.key()];
    for (;;) {
      this.skipSpace();
      if (this.s[this.i] !== ".") return keys;
      this.i++;
      keys.push(this.key());
    }
  }

  private key(): string {
    this.skipSpace();
    const c = this.s[this.i];
    if (c === '"' || c === "'") return this.string();
    const m = /^[A-Za-z0-9_-]+/.exec(this.s.slice(this.i));
    if (!m) throw this.error("a key");
    this.i += m[0].length;
    return m[0];
  }

  private value(): unknown {
    this.skipSpace();
    const c = this.s[this.i];
    if (c === '"' || c === "'") return this.string();
    if (c === "[") return this.array();
    if (c === "{") return this.inlineTable();
    const m = /^[^\s,\]}#]+/.exec(this.s.slice(this.i));
    if (!m) throw this.error("a value");
    this.i += m[0].length;
    if (m[0] === "true" || m[0] === "false") return m[0] === "true";
    const n = Number(m[0].replace(/_/g, ""));
    return Number.isNaN(n) ? m[0] : n;
  }

  private array(): unknown[] {
    this.i++;
    const out: unknown[] = [];
    for (;;) {
      this.skipBlank(true);
      if (this.s[this.i] === "]") {
        this.i++;
        return out;
      }
      out.push(this.value());
      this.skipBlank(true);
      if (this.s[this.i] === ",") this.i++;
      else if (this.s[this.i] !== "]") throw this.error("',' or ']'");
    }
  }

  private inlineTable(): Table {
    this.i++;
    const t: Table = {};
    for (;;) {
      this.skipSpace();
      if (this.s[this.i] === "}") {
        this.i++;
        return t;
      }
      const keys = this.keyPath();
      this.expect("=");
      this.assign(t, keys, this.value());
      this.skipSpace();
      if (this.s[this.i] === ",") this.i++;
      else if (this.s[this.i] !== "}") throw this.error("',' or '}'");
    }
  }

  private string(): string {
    const q = this.s[this.i];
    const multi = this.s.startsWith(q.repeat(3), this.i);
    const close = multi ? q.repeat(3) : q;
    this.i += close.length;
    if (multi && this.s[this.i] === "\n") this.i++;
    let out = "";
    for (;;) {
      if (this.i >= this.s.length) throw this.error("the end of a string");
      if (this.s.startsWith(close, this.i)) {
        this.i += close.length;
        return out;
      }
      const c = this.s[this.i++];
      if (c === "\n" && !multi) throw this.error("the end of a string");
      if (c !== "\\" || q === "'") {
        out += c;
        continue;
      }
      const e = this.s[this.i++];
      const simple: Record<string, string> = { b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", '"': '"', "\\": "\\" };
      if (e in simple) out += simple[e];
      else if (e === "u" || e === "U") {
        const len = e === "u" ? 4 : 8;
        out += String.fromCodePoint(parseInt(this.s.slice(this.i, this.i + len), 16));
        this.i += len;
      } else if (multi && /\s/.test(e)) {
        while (/\s/.test(this.s[this.i] ?? "")) this.i++;
      } else throw this.error(`an escape, not \\${e}`);
    }
  }

  private expect(tok: string): void {
    this.skipSpace();
    if (!this.s.startsWith(tok, this.i)) throw this.error(`'${tok}'`);
    this.i += tok.length;
  }

  private endOfLine(): void {
    this.skipSpace();
    if (this.s[this.i] === "#") while (this.i < this.s.length && this.s[this.i] !== "\n") this.i++;
    if (this.i < this.s.length && this.s[this.i] !== "\n" && this.s[this.i] !== "\r") throw this.error("the end of the line");
  }

  private skipSpace(): void {
    while (this.s[this.i] === " " || this.s[this.i] === "\t") this.i++;
  }

  // skipBlank skips spaces, newlines and comments.
  private skipBlank(newlines: boolean): void {
    for (;;) {
      this.skipSpace();
      const c = this.s[this.i];
      if (c === "#") while (this.i < this.s.length && this.s[this.i] !== "\n") this.i++;
      else if (newlines && (c === "\n" || c === "\r")) this.i++;
      else return;
    }
  }

  private error(want: string): Error {
    const line = this.s.slice(0, this.i).split("\n").length;
    return new Error(`line ${line}: expected ${want}`);
  }
}
