// Rendering of the server's torchlsp/status notification for a status bar,
// and the record of which target is active. Pure, so it is unit-tested
// under plain node.

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
  /** The workspace's torchlsp.toml is there but not trusted (as it is now). */
  needsTrust: boolean;
}

/** What the status bar knows of the workspace's torchlsp.toml. */
export interface WorkspaceFileView {
  path: string;
  /** "trusted", "untrusted" or "changed" (since trusted). */
  trust: string;
}

const icons: Record<string, string> = {
  connecting: "$(sync~spin)",
  indexing: "$(sync~spin)",
  ready: "$(check)",
  error: "$(error)",
};

/** Renders a status notification; unknown states are shown as given. */
export function renderStatus(p: StatusParams, file?: WorkspaceFileView): StatusView {
  const state = p.state ?? "connecting";
  const target = p.target || "local";
  const icon = icons[state] ?? "$(question)";
  const torch = p.torchVersion ? ` torch ${p.torchVersion}` : "";
  const needsTrust = file !== undefined && file.trust !== "trusted";
  const text = `${icon} ${target}${torch}${needsTrust ? " $(shield)" : ""}`;
  const lines = [`TorchLSP: ${state} on target ${target}`];
  if (p.torchVersion) lines.push(`torch ${p.torchVersion}`);
  if (p.message) lines.push(p.message);
  if (file) {
    lines.push(
      needsTrust
        ? `${file.path} is ${file.trust === "changed" ? "changed since you trusted it" : "not trusted"}: its targets are ignored. Click to review and trust it.`
        : `${file.path} is trusted.`,
    );
  }
  if (!needsTrust) lines.push("Click to select a target.");
  return { text, tooltip: lines.join("\n"), isError: state === "error", needsTrust };
}

/**
 * Follows the active target: the server sends torchlsp/status for the
 * default target only, and only when its state changes, so the last status
 * of every target is kept and shown again when that target becomes active
 * (after Select Target, or when a torchlsp.toml is trusted or stops being
 * trusted).
 */
export class StatusTracker {
  private readonly byTarget = new Map<string, StatusParams>();
  private active: string | undefined;

  /** Records a torchlsp/status notification; its target is the active one. */
  update(p: StatusParams): void {
    const target = p.target || "local";
    this.byTarget.set(target, { ...p, target });
    this.active = target;
  }

  /** Sets the active target as the server reports it (its targets listing). */
  setActive(target: string | undefined): void {
    if (target) this.active = target;
  }

  /** The active target, if known. */
  activeTarget(): string | undefined {
    return this.active;
  }

  /** The status to show: the active target's last one, or connecting. */
  current(fallbackTarget?: string): StatusParams {
    const target = this.active ?? fallbackTarget ?? "local";
    return this.byTarget.get(target) ?? { target, state: "connecting" };
  }

  /** Forgets everything (the server restarted). */
  clear(): void {
    this.byTarget.clear();
    this.active = undefined;
  }
}
