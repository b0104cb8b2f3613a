// Pure mapping from the extension's settings to what the server reads as
// initializationOptions and as the "torchlsp" workspace/configuration
// section. Kept free of the vscode module so it is unit-tested under plain node.

/** One target as the server expects it (the shape of a torchlsp.toml [targets.NAME] table). */
export interface TargetSettings {
  python: string;
  env?: Record<string, string>;
  packages?: string[];
  ssh?: string;
  jump?: string[];
  exec?: string[];
  /** The workspace's working copy on the target: its paths in tracebacks open the workspace's files. */
  workdir?: string;
}

/**
 * The "torchlsp" settings section as the server reads it. defaultTarget is
 * present only when the user chose one in the editor: otherwise the
 * default of a trusted torchlsp.toml or of config.toml decides.
 */
export interface ServerSettings {
  defaultTarget?: string;
  targets: Record<string, TargetSettings>;
  logLevel: LogLevel;
  /** What the target's site holds, and how hovers share the work with the Python server; only what the user set. */
  site?: SiteSettings;
}

/** The server's site settings (the [site] table of torchlsp.toml). */
export interface SiteSettings {
  packages?: string[];
  hover?: "compact" | "full";
}

export type LogLevel = "debug" | "info" | "warn" | "error";

const logLevels: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/** The name of the target that needs no definition. */
export const localTarget = "local";

/** Reads one setting; mirrors vscode.WorkspaceConfiguration.get. */
export type SettingsReader = (key: string) => unknown;

/** The result of mapping: settings for the server plus what was wrong with the input. */
export interface MappedSettings {
  settings: ServerSettings;
  problems: string[];
}

/**
 * Maps raw settings (torchlsp.defaultTarget, torchlsp.targets,
 * torchlsp.logLevel) to the server's section. Malformed entries are dropped
 * and reported, so one bad target does not stop the server for the others.
 */
export function mapSettings(read: SettingsReader): MappedSettings {
  const problems: string[] = [];
  const targets: Record<string, TargetSettings> = {};

  const rawTargets = read("targets");
  if (rawTargets !== undefined && rawTargets !== null && !isRecord(rawTargets)) {
    problems.push("torchlsp.targets must be an object of targets by name");
  } else if (isRecord(rawTargets)) {
    for (const [name, raw] of Object.entries(rawTargets)) {
      const target = mapTarget(name, raw, problems);
      if (target) targets[name] = target;
    }
  }

  let defaultTarget: string | undefined;
  const rawDefault = read("defaultTarget");
  if (typeof rawDefault === "string") {
    if (rawDefault.trim() !== "") defaultTarget = rawDefault.trim();
  } else if (rawDefault !== undefined && rawDefault !== null) {
    problems.push("torchlsp.defaultTarget must be a string");
  }
  // A name no editor target defines is not a problem here: torchlsp.toml or
  // config.toml may define it, and the server says so when none does.

  let logLevel: LogLevel = "info";
  const rawLevel = read("logLevel");
  if (typeof rawLevel === "string" && (logLevels as readonly string[]).includes(rawLevel)) {
    logLevel = rawLevel as LogLevel;
  } else if (rawLevel !== undefined && rawLevel !== null) {
    problems.push(`torchlsp.logLevel must be one of ${logLevels.join(", ")}`);
  }

  const site: SiteSettings = {};
  const rawPackages = read("site.packages");
  if (isStringArray(rawPackages)) {
    if (rawPackages.length > 0) site.packages = [...rawPackages];
  } else if (rawPackages !== undefined && rawPackages !== null) {
    problems.push("torchlsp.site.packages must be a list of package names");
  }
  const rawHover = read("site.hover");
  if (rawHover === "compact" || rawHover === "full") site.hover = rawHover;
  else if (rawHover !== undefined && rawHover !== null && rawHover !== "") {
    problems.push('torchlsp.site.hover must be "compact" or "full"');
  }

  const settings: ServerSettings = { targets, logLevel };
  if (defaultTarget !== undefined) settings.defaultTarget = defaultTarget;
  if (Object.keys(site).length > 0) settings.site = site;
  return { settings, problems };
}

function mapTarget(name: string, raw: unknown, problems: string[]): TargetSettings | undefined {
  const where = `torchlsp.targets.${name}`;
  if (name.trim() === "") {
    problems.push("torchlsp.targets: a target has an empty name");
    return undefined;
  }
  if (!isRecord(raw)) {
    problems.push(`${where} must be an object`);
    return undefined;
  }
  if (typeof raw.python !== "string" || raw.python.trim() === "") {
    problems.push(`${where}.python must name the interpreter on the target`);
    return undefined;
  }
  const target: TargetSettings = { python: raw.python };
  if (raw.env !== undefined) {
    if (isRecord(raw.env) && Object.values(raw.env).every((v) => typeof v === "string")) {
      target.env = { ...(raw.env as Record<string, string>) };
    } else {
      problems.push(`${where}.env must map names to strings`);
      return undefined;
    }
  }
  for (const key of ["packages", "jump", "exec"] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    if (!isStringArray(value)) {
      problems.push(`${where}.${key} must be a list of strings`);
      return undefined;
    }
    target[key] = [...value];
  }
  if (raw.ssh !== undefined) {
    if (typeof raw.ssh !== "string" || !validSSH(raw.ssh)) {
      problems.push(`${where}.ssh must look like user@host or user@host:port`);
      return undefined;
    }
    target.ssh = raw.ssh;
  }
  if (target.jump && target.jump.length > 0 && !target.ssh) {
    problems.push(`${where}.jump needs ssh to be set`);
    return undefined;
  }
  if (raw.workdir !== undefined) {
    if (typeof raw.workdir !== "string" || !raw.workdir.startsWith("/")) {
      problems.push(`${where}.workdir must be an absolute path on the target`);
      return undefined;
    }
    target.workdir = raw.workdir;
  }
  return target;
}

// validSSH accepts [user@]host[:port], with host possibly a bracketed IPv6 address.
function validSSH(s: string): boolean {
  return /^([^@\s:]+@)?(\[[0-9a-fA-F:.]+\]|[^@\s:\[\]]+)(:\d{1,5})?$/.test(s);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/**
 * Names a user can pick as target: local first, then the editor's own
 * targets in order, then those only the server knows (a trusted
 * torchlsp.toml, config.toml), each once.
 */
export function targetNames(settings: ServerSettings, serverNames: readonly string[] = []): string[] {
  const names = [localTarget, ...Object.keys(settings.targets), ...serverNames];
  return [...new Set(names)];
}

/** What vscode.WorkspaceConfiguration.inspect returns, as far as it matters here. */
export interface Inspected<T> {
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * The torchlsp.defaultTarget the user set, or undefined when none was: the
 * setting's default is never sent, so a trusted torchlsp.toml's default
 * wins. A repository's .vscode/settings.json may choose the target only in
 * a trusted workspace; the user's own settings always may.
 */
export function userDefaultTarget(inspected: Inspected<unknown> | undefined, workspaceTrusted: boolean): unknown {
  if (!inspected) return undefined;
  const set = (v: unknown) => v !== undefined && !(typeof v === "string" && v.trim() === "");
  if (workspaceTrusted) {
    if (set(inspected.workspaceFolderValue)) return inspected.workspaceFolderValue;
    if (set(inspected.workspaceValue)) return inspected.workspaceValue;
  }
  return set(inspected.globalValue) ? inspected.globalValue : undefined;
}
