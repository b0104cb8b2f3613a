// Interpreting what a torchlsp.* workspace/executeCommand returns. Pure, so
// it is unit-tested under plain node.
import { pathToFileURL } from "url";

/** A document to open: its URI, and whether to show it as a rendered markdown preview. */
export interface OpenDocument {
  uri: string;
  preview: boolean;
}

/**
 * How to show a command's result. Every part is optional; an empty object
 * means there is nothing to show.
 */
export interface CommandOutput {
  /** A file the result points at (a repro report, the mirror's __init__.py). */
  open?: OpenDocument;
  /** The other reports of a repro run on several targets, in order. */
  also?: OpenDocument[];
  /** Markdown to show as its own document. */
  markdown?: string;
  /** A one-line message for a notification. */
  message?: string;
}

/**
 * Classifies a result. The server answers with objects
 * `{markdown?, path?, targets?, default?}`; a run (repro, explain) answers at
 * once with `{run, title}` and goes on, its report opened through
 * window/showDocument when it ends (a run waited for also carries
 * `{markdown, path}`); a cancel names the runs it reached (`{cancelled}`). A
 * markdown report that was also
 * written to `path` is shown once, as the preview of that file. Older shapes
 * (a string, MarkupContent, `{uri}`) are still understood, and anything else
 * is shown as JSON so nothing the server says is lost.
 */
export function classifyResult(result: unknown): CommandOutput {
  if (result === null || result === undefined) return {};
  if (typeof result === "string") {
    const s = result.trim();
    if (/^file:\/\/\S+$/.test(s)) return { open: { uri: s, preview: isMarkdownPath(s) } };
    return s === "" ? {} : textOutput(result);
  }
  if (typeof result !== "object" || Array.isArray(result)) return jsonOutput(result);
  const r = result as Record<string, unknown>;
  if (typeof r.uri === "string") return { open: { uri: r.uri, preview: isMarkdownPath(r.uri) } };
  if (typeof r.value === "string") return r.value.trim() === "" ? {} : textOutput(r.value);
  const out: CommandOutput = {};
  let known = false;
  if (typeof r.path === "string" && r.path !== "") {
    known = true;
    out.open = { uri: pathToFileURL(r.path).toString(), preview: isMarkdownPath(r.path) };
  }
  if (typeof r.markdown === "string") {
    known = true;
    // A markdown file opened as a preview already holds the report.
    if (r.markdown.trim() !== "" && !out.open?.preview) Object.assign(out, textOutput(r.markdown));
    // A run on several targets writes one report each; the result's path
    // names the first, the markdown every run's folder.
    if (out.open?.preview) {
      const first = out.open.uri;
      const also = reportDirs(r.markdown)
        .map((dir) => pathToFileURL(dir.replace(/\/+$/, "") + "/report.md").toString())
        .filter((uri, i, all) => uri !== first && all.indexOf(uri) === i)
        .map((uri) => ({ uri, preview: true }));
      if (also.length > 0) out.also = also;
    }
  }
  if (typeof r.run === "string") {
    known = true;
    const title = typeof r.title === "string" && r.title !== "" ? r.title : "run";
    if (!out.open && !out.markdown) out.message = `started ${title} (run ${r.run}; TorchLSP: Cancel Runs stops it)`;
  }
  if (Array.isArray(r.cancelled)) {
    known = true;
    out.message = r.cancelled.length === 0 ? "no run in progress" : `cancelled ${r.cancelled.join("; ")}`;
  }
  if (Array.isArray(r.targets) || typeof r.default === "string") {
    known = true;
    if (!out.markdown && !out.message) out.message = describeTargets(r.targets, r.default);
  }
  return known ? out : jsonOutput(result);
}

// textOutput shows one line as a notification, more as a document.
function textOutput(text: string): CommandOutput {
  const t = text.trim();
  return t.includes("\n") ? { markdown: text } : { message: t };
}

function jsonOutput(result: unknown): CommandOutput {
  return { markdown: "```json\n" + JSON.stringify(result, null, 2) + "\n```" };
}

function describeTargets(targets: unknown, def: unknown): string {
  const names = Array.isArray(targets) ? targets.filter((t): t is string => typeof t === "string") : [];
  const current = typeof def === "string" && def !== "" ? `target ${def}` : "no target selected";
  return names.length > 0 ? `${current} (targets: ${names.join(", ")})` : current;
}

/**
 * The run folders a repro report names ("Scripts and output: `DIR`"), one
 * per target, in order.
 */
export function reportDirs(markdown: string): string[] {
  const dirs: string[] = [];
  for (const m of markdown.matchAll(/^Scripts and output: `([^`\n]+)`\s*$/gm)) dirs.push(m[1]);
  return dirs;
}

/** Reports whether a path or URI names a markdown file. */
export function isMarkdownPath(p: string): boolean {
  return /\.(md|markdown)$/i.test(p);
}

/** Server commands whose results the extension shows. */
export const serverCommands = {
  selectTarget: "torchlsp.selectTarget",
  repro: "torchlsp.repro",
  doctor: "torchlsp.doctor",
  openMirror: "torchlsp.openMirror",
  gates: "torchlsp.gates",
  cancelRun: "torchlsp.cancelRun",
} as const;

/** Reports whether a command belongs to the server's torchlsp.* set. */
export function isServerCommand(command: string): boolean {
  return (Object.values(serverCommands) as string[]).includes(command);
}

/** The argument object of torchlsp.repro. */
export interface ReproArgs {
  uri: string;
  /** 0-based line of (or after) the torch.compile call. */
  line: number;
  target?: string;
  all?: boolean;
}

/** One entry of the repro target picker. */
export interface ReproChoice {
  label: string;
  description: string;
  target?: string;
  all?: boolean;
}

/**
 * The choices for "Run Threaded Repro Here": the default target first, then
 * the other configured targets, then every target when there are several.
 */
export function reproChoices(names: string[], defaultTarget: string): ReproChoice[] {
  const others = names.filter((n) => n !== defaultTarget);
  const choices: ReproChoice[] = [{ label: defaultTarget, description: "default target", target: defaultTarget }];
  for (const n of others) choices.push({ label: n, description: "", target: n });
  if (others.length > 0) choices.push({ label: "every target", description: names.join(", "), all: true });
  return choices;
}

/** Builds torchlsp.repro's argument for a choice at a cursor line. */
export function reproArgs(uri: string, line: number, choice?: ReproChoice): ReproArgs {
  const args: ReproArgs = { uri, line };
  if (choice?.all) args.all = true;
  else if (choice?.target) args.target = choice.target;
  return args;
}
