import { strict as assert } from "node:assert";
import { test } from "node:test";
import { classifyResult, isServerCommand, reportDirs, reproArgs, reproChoices } from "../src/results";
import { renderStatus, StatusTracker } from "../src/status";

test("command results", async (t) => {
  const cases: { name: string; in: unknown; want: unknown }[] = [
    { name: "null", in: null, want: {} },
    { name: "blank string", in: "  ", want: {} },
    { name: "markdown string", in: "# Doctor\nok", want: { markdown: "# Doctor\nok" } },
    { name: "one-line string", in: "target h200 ", want: { message: "target h200" } },
    { name: "markup content", in: { kind: "markdown", value: "a\nb" }, want: { markdown: "a\nb" } },
    { name: "file uri string", in: "file:///m/torch/__init__.py", want: { open: { uri: "file:///m/torch/__init__.py", preview: false } } },
    { name: "uri object", in: { uri: "file:///m" }, want: { open: { uri: "file:///m", preview: false } } },
    {
      name: "repro report: the file is previewed, its markdown not shown twice",
      in: { markdown: "## repro\n| a |", path: "/ws/.torchlsp/repros/x/report.md" },
      want: { open: { uri: "file:///ws/.torchlsp/repros/x/report.md", preview: true } },
    },
    {
      name: "open mirror: the file opens and the line becomes a message",
      in: { markdown: "torch 2.11 is mirrored at `/m`", path: "/m/torch/__init__.py" },
      want: { open: { uri: "file:///m/torch/__init__.py", preview: false }, message: "torch 2.11 is mirrored at `/m`" },
    },
    { name: "doctor table", in: { markdown: "| | check |\n|---|---|" }, want: { markdown: "| | check |\n|---|---|" } },
    { name: "path with spaces", in: { path: "/a b/r.md" }, want: { open: { uri: "file:///a%20b/r.md", preview: true } } },
    { name: "select target", in: { targets: ["a", "h200"], default: "h200" }, want: { message: "target h200 (targets: a, h200)" } },
    { name: "empty markdown", in: { markdown: "" }, want: {} },
    {
      name: "repro on every target: the first report and each other one",
      in: {
        path: "/ws/.torchlsp/repros/1-a/report.md",
        markdown:
          "## repro on `a`\n\nScripts and output: `/ws/.torchlsp/repros/1-a`\n\n\n## repro on `b`\n\nScripts and output: `/ws/.torchlsp/repros/1-b`\n",
      },
      want: {
        open: { uri: "file:///ws/.torchlsp/repros/1-a/report.md", preview: true },
        also: [{ uri: "file:///ws/.torchlsp/repros/1-b/report.md", preview: true }],
      },
    },
    {
      name: "a run started: its title and id, the report to come",
      in: { run: "3", title: "threaded repro of train.py:17 on h200" },
      want: { message: "started threaded repro of train.py:17 on h200 (run 3; TorchLSP: Cancel Runs stops it)" },
    },
    {
      name: "a run waited for: its report",
      in: { run: "4", title: "t", markdown: "## repro\n| a |", path: "/ws/.torchlsp/repros/x/report.md" },
      want: { open: { uri: "file:///ws/.torchlsp/repros/x/report.md", preview: true } },
    },
    { name: "runs cancelled", in: { cancelled: ["3: t"] }, want: { message: "cancelled 3: t" } },
    { name: "no run to cancel", in: { cancelled: [] }, want: { message: "no run in progress" } },
    { name: "other json", in: [1], want: { markdown: "```json\n[\n  1\n]\n```" } },
    { name: "unknown object", in: { x: 1 }, want: { markdown: "```json\n{\n  \"x\": 1\n}\n```" } },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(classifyResult(c.in), c.want));
});

test("repro choices and arguments", async (t) => {
  await t.test("one target: only the default", () => {
    assert.deepEqual(reproChoices(["local"], "local"), [{ label: "local", description: "default target", target: "local" }]);
  });
  await t.test("several: default first, then others, then every target", () => {
    const got = reproChoices(["local", "debian", "h200"], "h200");
    assert.deepEqual(got.map((c) => c.label), ["h200", "local", "debian", "every target"]);
    assert.equal(got[3].all, true);
  });
  await t.test("arguments", () => {
    const [def, other, , all] = reproChoices(["local", "debian", "h200"], "h200");
    assert.deepEqual(reproArgs("file:///t.py", 10, def), { uri: "file:///t.py", line: 10, target: "h200" });
    assert.deepEqual(reproArgs("file:///t.py", 10, other), { uri: "file:///t.py", line: 10, target: "local" });
    assert.deepEqual(reproArgs("file:///t.py", 3, all), { uri: "file:///t.py", line: 3, all: true });
    assert.deepEqual(reproArgs("file:///t.py", 3), { uri: "file:///t.py", line: 3 });
  });
});

test("only torchlsp server commands are shown", () => {
  assert.equal(isServerCommand("torchlsp.repro"), true);
  assert.equal(isServerCommand("torchlsp.gates"), true);
  assert.equal(isServerCommand("torchlsp.cancelRun"), true);
  assert.equal(isServerCommand("torchlsp.ui.repro"), false);
  assert.equal(isServerCommand("editor.action.fix"), false);
});

test("status rendering", async (t) => {
  const cases = [
    { in: { target: "h200", torchVersion: "2.11.0", state: "ready" }, text: "$(check) h200 torch 2.11.0", err: false },
    { in: { target: "h200", state: "indexing", message: "3/5" }, text: "$(sync~spin) h200", err: false },
    { in: { state: "error", message: "ssh: refused" }, text: "$(error) local", err: true },
    { in: { target: "x", state: "weird" }, text: "$(question) x", err: false },
  ];
  for (const c of cases) {
    await t.test(c.text, () => {
      const v = renderStatus(c.in);
      assert.equal(v.text, c.text);
      assert.equal(v.isError, c.err);
      if ("message" in c.in) assert.match(v.tooltip, new RegExp(String(c.in.message)));
    });
  }
});

test("report folders named by a repro's markdown", () => {
  assert.deepEqual(reportDirs("x\nScripts and output: `/a b/1-x`\nScripts and output: `/c`\n  Scripts and output: `/not-at-start`"), ["/a b/1-x", "/c"]);
  assert.deepEqual(reportDirs("no runs"), []);
});

test("status shows the workspace file's trust", async (t) => {
  await t.test("untrusted file: a shield, and a click trusts", () => {
    const v = renderStatus({ target: "local", state: "ready" }, { path: "/w/torchlsp.toml", trust: "changed" });
    assert.equal(v.text, "$(check) local $(shield)");
    assert.equal(v.needsTrust, true);
    assert.match(v.tooltip, /changed since you trusted it/);
  });
  await t.test("trusted file: no shield", () => {
    const v = renderStatus({ target: "gpu", state: "ready" }, { path: "/w/torchlsp.toml", trust: "trusted" });
    assert.equal(v.text, "$(check) gpu");
    assert.equal(v.needsTrust, false);
  });
});

test("status follows the active target", () => {
  const s = new StatusTracker();
  assert.deepEqual(s.current("fixture"), { target: "fixture", state: "connecting" });
  s.update({ target: "fixture", state: "ready", torchVersion: "2.11" });
  s.update({ target: "debian", state: "indexing" });
  assert.equal(s.activeTarget(), "debian");
  assert.equal(s.current().state, "indexing");
  // Back to a target whose state did not change: the server sends nothing.
  s.setActive("fixture");
  assert.deepEqual(s.current(), { target: "fixture", state: "ready", torchVersion: "2.11" });
  s.setActive("never-seen");
  assert.deepEqual(s.current(), { target: "never-seen", state: "connecting" });
  s.setActive(undefined);
  assert.equal(s.activeTarget(), "never-seen");
  s.update({ state: "ready" });
  assert.equal(s.activeTarget(), "local");
  s.clear();
  assert.equal(s.activeTarget(), undefined);
});
