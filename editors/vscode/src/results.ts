// Interpreting what a torchlsp.* workspace/executeCommand returns. Pure, so
// it is unit-tested under plain node.

/** How to show a command's result to the user. */
export type CommandOutput =
  | { kind: "none" }
  | { kind: "markdown"; text: string }
  | { kind: "open"; uri: string };

/**
 * Classifies a result: a string or MarkupContent is text to show; an object
 * with a uri (or a bare file:// string) is a document to open; anything else
 * is shown as JSON so nothing the server says is lost.
 */
export function classifyResult(result: unknown): CommandOutput {
  if (result === null || result === undefined) return { kind: "none" };
  if (typeof result === "string") {
    if (/^file:\/\/\S+$/.test(result.trim())) return { kind: "open", uri: result.trim() };
    return result.trim() === "" ? { kind: "none" } : { kind: "markdown", text: result };
  }
  if (typeof result === "object" && !Array.isArray(result)) {
    const r = result as Record<string, unknown>;
    if (typeof r.uri === "string") return { kind: "open", uri: r.uri };
    if (typeof r.value === "string") return { kind: "markdown", text: r.value };
    if (typeof r.markdown === "string") return { kind: "markdown", text: r.markdown };
  }
  return { kind: "markdown", text: "```json\n" + JSON.stringify(result, null, 2) + "\n```" };
}

/** Server commands whose results the extension shows. */
export const serverCommands = {
  selectTarget: "torchlsp.selectTarget",
  repro: "torchlsp.repro",
  doctor: "torchlsp.doctor",
  openMirror: "torchlsp.openMirror",
} as const;

/** Reports whether a command belongs to the server's torchlsp.* set. */
export function isServerCommand(command: string): boolean {
  return (Object.values(serverCommands) as string[]).includes(command);
}
