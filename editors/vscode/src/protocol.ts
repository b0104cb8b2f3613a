// What the extension announces to the server and how it presents the
// server's code actions. Pure, so it is unit-tested under plain node.

/** torchlsp's own notifications the extension handles. */
export const notifications: readonly string[] = ["torchlsp/status", "torchlsp/site"];

/**
 * Announces the notifications in the client capabilities
 * (experimental.torchlsp.notifications): the server sends them only to a
 * client that announces them. Other experimental entries are kept.
 */
export function announceNotifications(capabilities: { experimental?: unknown }): void {
  const exp =
    typeof capabilities.experimental === "object" && capabilities.experimental !== null && !Array.isArray(capabilities.experimental)
      ? (capabilities.experimental as Record<string, unknown>)
      : {};
  exp.torchlsp = { notifications: [...notifications] };
  capabilities.experimental = exp;
}

/** The kinds of torchlsp's runs (the threaded repro, explain compile). */
const runKind = "source.torchlsp";

/** Where VS Code's Quick Fix menu lists torchlsp's runs ("More Actions…"). */
export const menuRunKind = "torchlsp";

/**
 * The kind a code action takes in VS Code. The server files its runs under
 * source.torchlsp.*, as the protocol asks of actions that edit nothing;
 * VS Code leaves every source action out of the light bulb and the Quick
 * Fix menu (Ctrl+.), where users find the repro beside the fix. So when
 * VS Code asks without naming kinds (that menu), a run is given a kind
 * outside source, torchlsp.*; when it names kinds (the Source Action menu,
 * codeActionsOnSave), the server's kind stands.
 */
export function presentedKind(kind: string | undefined, onlyAsked: boolean): string | undefined {
  if (onlyAsked || kind === undefined || (kind !== runKind && !kind.startsWith(runKind + "."))) return kind;
  return menuRunKind + kind.slice(runKind.length);
}
