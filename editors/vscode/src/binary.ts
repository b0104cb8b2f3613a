// Finding the server binary: the torchlsp.path setting, else PATH, else the
// places `go install` and pip-style installs put it (~/.local/bin, GOBIN,
// GOPATH/bin, ~/go/bin). Pure but for the injected file check, so it is
// unit-tested under plain node.
import * as path from "path";

/** Reports whether a file exists and is executable. */
export type ExecutableCheck = (file: string) => boolean;

/** Where to look for the binary. */
export interface BinaryLookup {
  configuredPath: string | undefined;
  envPath: string | undefined;
  homeDir: string;
  platform: NodeJS.Platform;
  isExecutable: ExecutableCheck;
  /**
   * What `go env GOBIN GOPATH` printed (one value a line; either may be
   * empty), or undefined when go is not installed. GOPATH may list several
   * folders.
   */
  goEnv?: string;
}

/** The outcome of a lookup: the binary found, or why none was. */
export type BinaryResult =
  | { found: true; path: string }
  | { found: false; reason: string };

/** The command that installs the server. */
export const installCommand = "go install github.com/torchlsp/torchlsp/cmd/torchlsp@latest";

/**
 * The folders searched after PATH, in order: ~/.local/bin, then GOBIN, each
 * GOPATH's bin and ~/go/bin (where `go install` puts binaries), without
 * repeats.
 */
export function fallbackDirs(homeDir: string, platform: NodeJS.Platform, goEnv: string | undefined): string[] {
  const dirs = [path.join(homeDir, ".local", "bin")];
  const [gobin = "", gopath = ""] = (goEnv ?? "").split(/\r?\n/).map((s) => s.trim());
  if (gobin !== "") dirs.push(gobin);
  const listSep = platform === "win32" ? ";" : ":";
  for (const p of gopath.split(listSep)) if (p !== "") dirs.push(path.join(p, "bin"));
  dirs.push(path.join(homeDir, "go", "bin"));
  return [...new Set(dirs)];
}

/** Finds the torchlsp binary as described by lookup. */
export function findBinary(lookup: BinaryLookup): BinaryResult {
  const configured = (lookup.configuredPath ?? "").trim();
  if (configured !== "") {
    const expanded = expandHome(configured, lookup.homeDir);
    if (lookup.isExecutable(expanded)) return { found: true, path: expanded };
    return {
      found: false,
      reason: `torchlsp.path is set to "${configured}", which is not an executable file.`,
    };
  }
  const exe = lookup.platform === "win32" ? "torchlsp.exe" : "torchlsp";
  const sep = lookup.platform === "win32" ? ";" : ":";
  const dirs = (lookup.envPath ?? "").split(sep).filter((d) => d !== "");
  const fallback = fallbackDirs(lookup.homeDir, lookup.platform, lookup.goEnv);
  for (const dir of [...dirs, ...fallback]) {
    const candidate = path.join(expandHome(dir, lookup.homeDir), exe);
    if (lookup.isExecutable(candidate)) return { found: true, path: candidate };
  }
  return {
    found: false,
    reason: `torchlsp was not found on PATH nor in ${fallback.join(", ")}, and torchlsp.path is not set.`,
  };
}

function expandHome(p: string, home: string): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return p;
}
