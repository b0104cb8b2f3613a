import { strict as assert } from "node:assert";
import { test } from "node:test";
import { classifyResult, isServerCommand } from "../src/results";
import { renderStatus } from "../src/status";

test("command results", async (t) => {
  const cases: { name: string; in: unknown; want: unknown }[] = [
    { name: "null", in: null, want: { kind: "none" } },
    { name: "blank string", in: "  ", want: { kind: "none" } },
    { name: "markdown string", in: "# Doctor\nok", want: { kind: "markdown", text: "# Doctor\nok" } },
    { name: "markup content", in: { kind: "markdown", value: "x" }, want: { kind: "markdown", text: "x" } },
    { name: "file uri string", in: "file:///m/torch/__init__.py", want: { kind: "open", uri: "file:///m/torch/__init__.py" } },
    { name: "uri object", in: { uri: "file:///m" }, want: { kind: "open", uri: "file:///m" } },
    { name: "other json", in: [1], want: { kind: "markdown", text: "```json\n[\n  1\n]\n```" } },
  ];
  for (const c of cases) await t.test(c.name, () => assert.deepEqual(classifyResult(c.in), c.want));
});

test("only torchlsp server commands are shown", () => {
  assert.equal(isServerCommand("torchlsp.repro"), true);
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
