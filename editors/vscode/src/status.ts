// Rendering of the server's torchlsp/status notification for a status bar.
// Pure, so it is unit-tested under plain node.

/** The payload of the torchlsp/status notification. */
export interface StatusParams {
  target?: string;
  torchVersion?: string;
  state?: string;
  message?: string;
}

/** What a status bar item shows. */
export interface StatusView {
  text: string;
  tooltip: string;
  isError: boolean;
}

const icons: Record<string, string> = {
  connecting: "$(sync~spin)",
  indexing: "$(sync~spin)",
  ready: "$(check)",
  error: "$(error)",
};

/** Renders a status notification; unknown states are shown as given. */
export function renderStatus(p: StatusParams): StatusView {
  const state = p.state ?? "connecting";
  const target = p.target || "local";
  const icon = icons[state] ?? "$(question)";
  const torch = p.torchVersion ? ` torch ${p.torchVersion}` : "";
  const text = `${icon} ${target}${torch}`;
  const lines = [`TorchLSP: ${state} on target ${target}`];
  if (p.torchVersion) lines.push(`torch ${p.torchVersion}`);
  if (p.message) lines.push(p.message);
  lines.push("Click to select a target.");
  return { text, tooltip: lines.join("\n"), isError: state === "error" };
}
