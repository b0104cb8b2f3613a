import { strict as assert } from "node:assert";
import { test } from "node:test";
import { fallbackDirs, findBinary } from "../src/binary";

test("binary lookup", async (t) => {
  const cases: {
    name: string;
    configured: string | undefined;
    envPath: string;
    goEnv?: string;
    executables: string[];
    want: { found: boolean; path?: string };
  }[] = [
    {
      name: "configured path wins over PATH",
      configured: "/opt/bin/torchlsp",
      envPath: "/usr/bin",
      executables: ["/opt/bin/torchlsp", "/usr/bin/torchlsp"],
      want: { found: true, path: "/opt/bin/torchlsp" },
    },
    {
      name: "configured path with ~ expands",
      configured: "~/go/bin/torchlsp",
      envPath: "",
      executables: ["/home/u/go/bin/torchlsp"],
      want: { found: true, path: "/home/u/go/bin/torchlsp" },
    },
    {
      name: "configured but missing does not fall back to PATH",
      configured: "/nope/torchlsp",
      envPath: "/usr/bin",
      executables: ["/usr/bin/torchlsp"],
      want: { found: false },
    },
    {
      name: "first PATH entry holding it",
      configured: "",
      envPath: "/a::/b:/c",
      executables: ["/b/torchlsp", "/c/torchlsp"],
      want: { found: true, path: "/b/torchlsp" },
    },
    {
      name: "PATH before ~/.local/bin",
      configured: "",
      envPath: "/usr/bin",
      executables: ["/home/u/.local/bin/torchlsp", "/usr/bin/torchlsp"],
      want: { found: true, path: "/usr/bin/torchlsp" },
    },
    {
      name: "~/.local/bin when not on PATH",
      configured: "",
      envPath: "/usr/bin",
      executables: ["/home/u/.local/bin/torchlsp", "/home/u/go/bin/torchlsp"],
      want: { found: true, path: "/home/u/.local/bin/torchlsp" },
    },
    {
      name: "~/go/bin, where go install puts it",
      configured: "",
      envPath: "/usr/bin",
      executables: ["/home/u/go/bin/torchlsp"],
      want: { found: true, path: "/home/u/go/bin/torchlsp" },
    },
    {
      name: "GOBIN from go env",
      configured: "",
      envPath: "/usr/bin",
      goEnv: "/opt/gobin\n/home/u/go\n",
      executables: ["/opt/gobin/torchlsp", "/home/u/go/bin/torchlsp"],
      want: { found: true, path: "/opt/gobin/torchlsp" },
    },
    {
      name: "GOPATH's bin when GOBIN is empty",
      configured: "",
      envPath: "",
      goEnv: "\n/srv/gp1:/srv/gp2\n",
      executables: ["/srv/gp2/bin/torchlsp"],
      want: { found: true, path: "/srv/gp2/bin/torchlsp" },
    },
    {
      name: "nowhere",
      configured: undefined,
      envPath: "/a:/b",
      executables: [],
      want: { found: false },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = findBinary({
        configuredPath: c.configured,
        envPath: c.envPath,
        goEnv: c.goEnv,
        homeDir: "/home/u",
        platform: "linux",
        isExecutable: (f) => c.executables.includes(f),
      });
      assert.equal(got.found, c.want.found);
      if (got.found) assert.equal(got.path, c.want.path);
      else assert.match(got.reason, /torchlsp/);
    });
  }
});

test("fallback folders: ~/.local/bin, GOBIN, GOPATH/bin, ~/go/bin, once each", () => {
  assert.deepEqual(fallbackDirs("/h", "linux", undefined), ["/h/.local/bin", "/h/go/bin"]);
  assert.deepEqual(fallbackDirs("/h", "linux", "/g\n/h/go\n"), ["/h/.local/bin", "/g", "/h/go/bin"]);
});

test("the failure names every place searched", () => {
  const got = findBinary({ configuredPath: "", envPath: "/a", homeDir: "/h", platform: "linux", isExecutable: () => false });
  assert.equal(got.found, false);
  if (!got.found) assert.match(got.reason, /\/h\/\.local\/bin, \/h\/go\/bin/);
});
