import { strict as assert } from "node:assert";
import { test } from "node:test";
import { mapSettings, targetNames, userDefaultTarget } from "../src/settings";

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

test("settings map to the server's section", async (t) => {
  const cases: {
    name: string;
    input: Record<string, unknown>;
    want: unknown;
    problems: RegExp[];
  }[] = [
    {
      name: "nothing set sends no default target: the toml's default decides",
      input: {},
      want: { targets: {}, logLevel: "info" },
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
      want: { targets: { box: { python: "/usr/bin/python3" } }, logLevel: "info" },
      problems: [],
    },
    {
      name: "target without python is dropped and reported",
      input: { targets: { bad: { ssh: "u@h" }, good: { python: "python3" } } },
      want: { targets: { good: { python: "python3" } }, logLevel: "info" },
      problems: [/bad\.python/],
    },
    {
      name: "non-string env value is rejected",
      input: { targets: { t: { python: "p", env: { N: 1 } } } },
      want: { targets: {}, logLevel: "info" },
      problems: [/t\.env/],
    },
    {
      name: "exec must be a list of strings",
      input: { targets: { t: { python: "p", exec: "pct exec 200 --" } } },
      want: { targets: {}, logLevel: "info" },
      problems: [/t\.exec/],
    },
    {
      name: "malformed ssh is rejected",
      input: { targets: { t: { python: "p", ssh: "user@host:port" } } },
      want: { targets: {}, logLevel: "info" },
      problems: [/t\.ssh/],
    },
    {
      name: "ipv6 ssh host is accepted",
      input: { targets: { t: { python: "p", ssh: "root@[::1]:22" } } },
      want: { targets: { t: { python: "p", ssh: "root@[::1]:22" } }, logLevel: "info" },
      problems: [],
    },
    {
      name: "a workdir passes through",
      input: { targets: { t: { python: "p", workdir: "/root/proj" } } },
      want: { targets: { t: { python: "p", workdir: "/root/proj" } }, logLevel: "info" },
      problems: [],
    },
    {
      name: "a relative workdir is rejected",
      input: { targets: { t: { python: "p", workdir: "proj" } } },
      want: { targets: {}, logLevel: "info" },
      problems: [/t\.workdir/],
    },
    {
      name: "jump without ssh is rejected",
      input: { targets: { t: { python: "p", jump: ["a@b"] } } },
      want: { targets: {}, logLevel: "info" },
      problems: [/jump needs ssh/],
    },
    {
      name: "a default target only another layer defines is passed on, not refused",
      input: { defaultTarget: "gpu" },
      want: { defaultTarget: "gpu", targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "explicit local is sent",
      input: { defaultTarget: "local" },
      want: { defaultTarget: "local", targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "blank default target is not sent",
      input: { defaultTarget: "  " },
      want: { targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "unknown log level falls back to info",
      input: { logLevel: "verbose" },
      want: { targets: {}, logLevel: "info" },
      problems: [/logLevel/],
    },
    {
      name: "site packages and hover pass through",
      input: { "site.packages": ["einops", "-sympy"], "site.hover": "full" },
      want: { targets: {}, logLevel: "info", site: { packages: ["einops", "-sympy"], hover: "full" } },
      problems: [],
    },
    {
      name: "site defaults send nothing",
      input: { "site.packages": [], "site.hover": "" },
      want: { targets: {}, logLevel: "info" },
      problems: [],
    },
    {
      name: "a bad site hover is reported",
      input: { "site.hover": "tiny", "site.packages": "einops" },
      want: { targets: {}, logLevel: "info" },
      problems: [/site\.packages/, /site\.hover/],
    },
    {
      name: "targets as an array is reported",
      input: { targets: [{ python: "p" }] },
      want: { targets: {}, logLevel: "info" },
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

test("target names list local first, once, then the server's", () => {
  const { settings } = mapSettings(
    reader({ targets: { b: { python: "p" }, local: { python: "/usr/bin/python3" }, a: { python: "p" } } }),
  );
  assert.deepEqual(targetNames(settings), ["local", "b", "a"]);
  assert.deepEqual(targetNames(settings, ["a", "gpu", "local", "z"]), ["local", "b", "a", "gpu", "z"]);
});

test("the default target the user set, and only that", async (t) => {
  const cases: { name: string; inspected: Record<string, unknown> | undefined; trusted: boolean; want: unknown }[] = [
    { name: "nothing inspected", inspected: undefined, trusted: true, want: undefined },
    { name: "only the setting's default", inspected: { defaultValue: "local" }, trusted: true, want: undefined },
    { name: "user value", inspected: { globalValue: "h200" }, trusted: false, want: "h200" },
    { name: "workspace value in a trusted workspace", inspected: { globalValue: "h200", workspaceValue: "gpu" }, trusted: true, want: "gpu" },
    { name: "workspace value ignored without trust", inspected: { globalValue: "h200", workspaceValue: "gpu" }, trusted: false, want: "h200" },
    { name: "repository value alone ignored without trust", inspected: { workspaceValue: "gpu" }, trusted: false, want: undefined },
    { name: "folder value wins over workspace", inspected: { workspaceValue: "gpu", workspaceFolderValue: "box" }, trusted: true, want: "box" },
    { name: "blank user value is unset", inspected: { globalValue: " " }, trusted: true, want: undefined },
  ];
  for (const c of cases) await t.test(c.name, () => assert.equal(userDefaultTarget(c.inspected, c.trusted), c.want));
});
