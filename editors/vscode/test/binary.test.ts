import { strict as assert } from "node:assert";
import { test } from "node:test";
import { findBinary } from "../src/binary";

test("binary lookup", async (t) => {
  const cases: { name: string; configured: string | undefined; envPath: string; executables: string[]; want: { found: boolean; path?: string } }[] = [
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
