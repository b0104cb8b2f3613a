// Wiring the user's main Python server (Pylance/pyright, basedpyright,
// pylsp's jedi) to the active target's site: the folder the server keeps
// of the target's third-party packages is appended to each server's extra
// paths, and exactly that entry is taken out again. Pure, so it is
// unit-tested under plain node.

/** A list setting a Python server reads its extra import paths from. */
export interface ListSetting {
  /** The section to pass to getConfiguration. */
  section: string;
  key: string;
}

/** The settings the site path goes into. */
export const siteSettings: readonly ListSetting[] = [
  { section: "python.analysis", key: "extraPaths" }, // Pylance, pyright
  { section: "basedpyright.analysis", key: "extraPaths" },
  { section: "pylsp.plugins.jedi", key: "extra_paths" },
];

/** The full name of a setting. */
export function settingName(s: ListSetting): string {
  return `${s.section}.${s.key}`;
}

/** What the extension added to one workspace setting, remembered across sessions. */
export interface Added {
  setting: string;
  path: string;
  /** No workspace value existed: the value was made from the inherited one plus the path. */
  created: boolean;
}

/** A change to one workspace setting: the new value, or undefined to remove it. */
export interface Change {
  value: string[] | undefined;
}

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === "string") ? v : undefined;
}

/**
 * Adds path to a list setting's workspace value. A workspace value hides
 * the user's own (VS Code does not merge lists across scopes), so when
 * there is none the inherited value is copied first. Returns undefined when
 * nothing should change: the path is there already (then it is the user's,
 * and never removed), or the value is not a list of strings.
 */
export function addPath(
  setting: string,
  workspaceValue: unknown,
  inherited: unknown,
  path: string,
): { change: Change; added: Added } | undefined {
  if (path === "") return undefined;
  if (workspaceValue !== undefined) {
    const ws = strings(workspaceValue);
    if (!ws || ws.includes(path)) return undefined;
    return { change: { value: [...ws, path] }, added: { setting, path, created: false } };
  }
  const base = strings(inherited) ?? [];
  if (base.includes(path)) return undefined;
  return { change: { value: [...base, path] }, added: { setting, path, created: true } };
}

/**
 * Takes out what addPath added. The user's own entries stay; a workspace
 * value the extension created goes again once only the inherited entries
 * are left. Returns undefined when nothing should change.
 */
export function removePath(workspaceValue: unknown, inherited: unknown, added: Added): Change | undefined {
  const ws = strings(workspaceValue);
  if (!ws) return undefined;
  const at = ws.lastIndexOf(added.path);
  if (at < 0) return undefined;
  const rest = [...ws.slice(0, at), ...ws.slice(at + 1)];
  const base = strings(inherited) ?? [];
  if (added.created && rest.length === base.length && rest.every((p, i) => p === base[i])) return { value: undefined };
  return { value: rest };
}

/** The payload of the server's torchlsp/site notification. */
export interface SiteParams {
  target?: string;
  /** The target's site folder on this machine; "" when there is none. */
  path?: string;
}

/** Reads the site path out of a torchlsp/site notification or a torchlsp.site result. */
export function sitePath(p: unknown): string {
  if (typeof p !== "object" || p === null) return "";
  const path = (p as SiteParams).path;
  return typeof path === "string" ? path : "";
}

/** Reads the target out of a torchlsp/site notification. */
export function siteTarget(p: unknown): string {
  if (typeof p !== "object" || p === null) return "";
  const target = (p as SiteParams).target;
  return typeof target === "string" ? target : "";
}

/** A site and the target it belongs to; path "" for none. */
export interface SiteEntry {
  target: string;
  path: string;
}

/**
 * Which site the Python servers read: the last one the server announced,
 * while its target is the active one. The server announces its default
 * target's site only, but a notification can cross a target switch on the
 * way: a site of a target that is not the active one is held back, and a
 * switch takes the old target's site out at once, until the new target's
 * arrives (or the active target turns out to be the announced one after all).
 */
export class SiteChoice {
  private announced: SiteEntry = { target: "", path: "" };
  private active: string | undefined;

  /** Records a torchlsp/site notification (target "" from a server that names none). */
  announce(target: string, path: string): void {
    this.announced = { target, path };
  }

  /** Records the active target (undefined: not known); reports whether it changed. */
  setActive(target: string | undefined): boolean {
    const next = target || undefined;
    if (next === this.active) return false;
    this.active = next;
    return true;
  }

  /** The site to put into the settings now. */
  current(): SiteEntry {
    const a = this.announced;
    if (a.path !== "" && a.target !== "" && this.active !== undefined && a.target !== this.active) {
      return { target: this.active, path: "" };
    }
    return { ...a };
  }
}
