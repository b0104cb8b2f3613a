import { strict as assert } from "node:assert";
import { test } from "node:test";
import { documentSelector, terminalTargets, tracebackArgs } from "../src/links";

test("terminal targets from torchlsp.links", () => {
  const line = '→ ü File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", line 114, in forward';
  const result = {
    links: [
      { line: 0, start: 12, end: 82, startUTF16: 10, endUTF16: 80, uri: "file:///c/site/torch/nn/modules/linear.py#L114", path: "/c/site/torch/nn/modules/linear.py", fileLine: 114, tooltip: "torch 1.13.0a0 on deb (mirror)" },
      // Not linked: no path, the tooltip says why.
      { line: 0, start: 0, end: 5, startUTF16: 0, endUTF16: 5, fileLine: 3, tooltip: "from torch 2.11.0, but …" },
      // Outside the line, reversed, malformed, a relative path: dropped or kept without a path.
      { startUTF16: 80, endUTF16: 500, fileLine: 1 },
      { startUTF16: 9, endUTF16: 2, fileLine: 1 },
      { startUTF16: "1", endUTF16: 2 },
      { startUTF16: 1, endUTF16: 2, path: "relative/x.py", fileLine: 2 },
      null,
    ],
  };
  assert.deepEqual(terminalTargets(result, line.length), [
    { startIndex: 10, length: 70, tooltip: "torch 1.13.0a0 on deb (mirror)", path: "/c/site/torch/nn/modules/linear.py", line: 114 },
    { startIndex: 0, length: 5, tooltip: "from torch 2.11.0, but …", line: 3 },
    { startIndex: 1, length: 1, tooltip: "", line: 2 },
  ]);
  assert.deepEqual(terminalTargets(null, 10), []);
  assert.deepEqual(terminalTargets({ links: "x" }, 10), []);
});

test("the documents the server reads", () => {
  const has = (f: object) => documentSelector.some((d) => JSON.stringify(d) === JSON.stringify(f));
  assert.ok(has({ scheme: "file", language: "python" }));
  assert.ok(has({ scheme: "file", language: "log" }));
  assert.ok(has({ scheme: "untitled" }));
  assert.ok(documentSelector.some((d) => d.pattern?.includes(".torchlsp/repros")));
});

test("traceback arguments", () => {
  assert.deepEqual(tracebackArgs("file:///a.log", 9, 3), { uri: "file:///a.log", line: 3, endLine: 9 });
});
