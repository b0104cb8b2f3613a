// Finding the server binary: the torchlsp.path setting, else PATH. Pure but
// for the injected file check, so it is unit-tested under plain node.
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
}

/** The outcome of a lookup: the binary found, or why none was. */
export type BinaryResult =
  | { found: true; path: string }
  | { found: false; reason: string };

/** The command that installs the server. */
export const installCommand = "go install github.com/torchlsp/torchlsp/cmd/torchlsp@latest";

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
  for (const dir of (lookup.envPath ?? "").split(sep)) {
    if (dir === "") continue;
    const candidate = path.join(expandHome(dir, lookup.homeDir), exe);
    if (lookup.isExecutable(candidate)) return { found: true, path: candidate };
  }
  return { found: false, reason: "torchlsp was not found on PATH and torchlsp.path is not set." };
}

function expandHome(p: string, home: string): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return p;
}
