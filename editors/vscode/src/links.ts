// Target paths in logs and terminals: which documents the server reads for
// links, and how its torchlsp.links answer becomes terminal links. Pure, so
// it is unit-tested under plain node.

/** A document filter, as vscode-languageclient takes it (every one here names its scheme). */
export interface DocumentFilter {
  scheme: string;
  language?: string;
  pattern?: string;
}

/**
 * The documents the server is given: Python files (hover, diagnostics), and
 * the logs and text that tracebacks from the target come in (document links
 * into the mirror and the workspace, the traceback action): log and plain
 * text files, run output, untitled buffers (a pasted traceback), and the
 * repro runs' reports and output files.
 */
export const documentSelector: DocumentFilter[] = [
  { scheme: "file", language: "python" },
  { scheme: "file", language: "log" },
  { scheme: "file", language: "plaintext" },
  { scheme: "file", pattern: "**/*.{log,out,err,stdout,stderr}" },
  { scheme: "file", pattern: "**/.torchlsp/repros/**" },
  { scheme: "untitled" },
];

/** The server command that maps a terminal's line. */
export const linksCommand = "torchlsp.links";

/** The server command that maps a traceback (text, or a document's lines). */
export const tracebackCommand = "torchlsp.traceback";

/** The longest terminal line sent to the server. */
export const maxTerminalLine = 16 * 1024;

/** One link in a terminal line: where it is (UTF-16 indexes) and what it opens. */
export interface TerminalTarget {
  startIndex: number;
  length: number;
  tooltip: string;
  /** The local file, absent when the server would not link it (tooltip says why). */
  path?: string;
  /** 1-based line in path. */
  line: number;
}

/**
 * Reads torchlsp.links' answer `{links: [{startUTF16, endUTF16, path?,
 * fileLine, tooltip?}]}` for one terminal line of lineLength UTF-16 units.
 * Entries that are malformed or fall outside the line are dropped.
 */
export function terminalTargets(result: unknown, lineLength: number): TerminalTarget[] {
  if (typeof result !== "object" || result === null) return [];
  const links = (result as { links?: unknown }).links;
  if (!Array.isArray(links)) return [];
  const out: TerminalTarget[] = [];
  for (const l of links) {
    if (typeof l !== "object" || l === null) continue;
    const r = l as Record<string, unknown>;
    const start = r.startUTF16;
    const end = r.endUTF16;
    if (typeof start !== "number" || typeof end !== "number" || !Number.isInteger(start) || !Number.isInteger(end)) continue;
    if (start < 0 || end <= start || end > lineLength) continue;
    if (r.line !== undefined && r.line !== 0) continue; // one terminal line at a time
    const target: TerminalTarget = {
      startIndex: start,
      length: end - start,
      tooltip: typeof r.tooltip === "string" ? r.tooltip : "",
      line: typeof r.fileLine === "number" && r.fileLine > 0 ? r.fileLine : 1,
    };
    if (typeof r.path === "string" && r.path.startsWith("/")) target.path = r.path;
    out.push(target);
  }
  return out;
}

/** The argument of torchlsp.traceback for lines first..last (0-based) of a document. */
export function tracebackArgs(uri: string, first: number, last: number): { uri: string; line: number; endLine: number } {
  return { uri, line: Math.min(first, last), endLine: Math.max(first, last) };
}
