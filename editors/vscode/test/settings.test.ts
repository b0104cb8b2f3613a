import { strict as assert } from "node:assert";
import { test } from "node:test";
import { mapSettings, targetNames } from "../src/settings";

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

test("settings map to the server's section", async (t) => {
  const cases: {
    name: string;
    input: Record<string, unknown>;
    want: unknown;
    problems: RegExp[];
  }[] = [
    {
      name: "nothing set gives local defaults",
      input: {},
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "full remote target passes through",
      input: {
        defaultTarget: "h200",
        logLevel: "debug",
        targets: {
          h200: {
            python: "/opt/torch/.venv/bin/python3",
            env: { CUDA_VISIBLE_DEVICES: "0" },
            packages: ["torch", "triton"],
            ssh: "root@gpu.example:2222",
            jump: ["me@bastion"],
            exec: ["pct", "exec", "200", "--"],
          },
        },
      },
      want: {
        defaultTarget: "h200",
        logLevel: "debug",
        targets: {
          h200: {
            python: "/opt/torch/.venv/bin/python3",
            env: { CUDA_VISIBLE_DEVICES: "0" },
            packages: ["torch", "triton"],
            ssh: "root@gpu.example:2222",
            jump: ["me@bastion"],
            exec: ["pct", "exec", "200", "--"],
          },
        },
      },
      problems: [],
    },
    {
      name: "unknown keys of a target are dropped",
      input: { targets: { box: { python: "/usr/bin/python3", colour: "red" } } },
      want: { defaultTarget: "local", targets: { box: { python: "/usr/bin/python3" } }, logLevel: "info" },
      problems: [],
    },
    {
      name: "target without python is dropped and reported",
      input: { targets: { bad: { ssh: "u@h" }, good: { python: "python3" } } },
      want: { defaultTarget: "local", targets: { good: { python: "python3" } }, logLevel: "info" },
      problems: [/bad\.python/],
    },
    {
      name: "non-string env value is rejected",
      input: { targets: { t: { python: "p", env: { N: 1 } } } },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/t\.env/],
    },
    {
      name: "exec must be a list of strings",
      input: { targets: { t: { python: "p", exec: "pct exec 200 --" } } },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/t\.exec/],
    },
    {
      name: "malformed ssh is rejected",
      input: { targets: { t: { python: "p", ssh: "user@host:port" } } },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/t\.ssh/],
    },
    {
      name: "ipv6 ssh host is accepted",
      input: { targets: { t: { python: "p", ssh: "root@[::1]:22" } } },
      want: { defaultTarget: "local", targets: { t: { python: "p", ssh: "root@[::1]:22" } }, logLevel: "info" },
      problems: [],
    },
    {
      name: "jump without ssh is rejected",
      input: { targets: { t: { python: "p", jump: ["a@b"] } } },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/jump needs ssh/],
    },
    {
      name: "undefined default target is reported but kept",
      input: { defaultTarget: "nowhere" },
      want: { defaultTarget: "nowhere", targets: {}, logLevel: "info" },
      problems: [/"nowhere" is not defined/],
    },
    {
      name: "blank default target means local",
      input: { defaultTarget: "  " },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "unknown log level falls back to info",
      input: { logLevel: "verbose" },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/logLevel/],
    },
    {
      name: "targets as an array is reported",
      input: { targets: [{ python: "p" }] },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [/must be an object/],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = mapSettings(reader(c.input));
      assert.deepEqual(got.settings, c.want);
      assert.equal(got.problems.length, c.problems.length, `problems: ${JSON.stringify(got.problems)}`);
      c.problems.forEach((re, i) => assert.match(got.problems[i], re));
    });
  }
});

test("mapping copies lists so later edits of the input do not leak", () => {
  const exec = ["pct", "exec", "200", "--"];
  const got = mapSettings(reader({ targets: { t: { python: "p", exec } } }));
  exec.push("extra");
  assert.deepEqual(got.settings.targets.t.exec, ["pct", "exec", "200", "--"]);
});

test("target names list local first, once", () => {
  const { settings } = mapSettings(
    reader({ targets: { b: { python: "p" }, local: { python: "/usr/bin/python3" }, a: { python: "p" } } }),
  );
  assert.deepEqual(targetNames(settings), ["local", "b", "a"]);
});
