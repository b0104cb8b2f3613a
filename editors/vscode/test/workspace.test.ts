import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { cacheDir, commandLine, describeSummary, parseTOML, stateDir, summarize, trustState } from "../src/workspace";

test("torchlsp's folders follow XDG, as the server's", () => {
  assert.equal(cacheDir({}, "/h"), "/h/.cache/torchlsp");
  assert.equal(cacheDir({ XDG_CACHE_HOME: "/x" }, "/h"), "/x/torchlsp");
  assert.equal(cacheDir({ XDG_CACHE_HOME: "rel" }, "/h"), "/h/.cache/torchlsp");
  assert.equal(stateDir({}, "/h"), "/h/.local/state/torchlsp");
  assert.equal(stateDir({ XDG_STATE_HOME: "/s" }, "/h"), "/s/torchlsp");
});

test("trust state from the server's records", async (t) => {
  const content = 'default = "gpu"\n';
  const digest = "sha256:" + createHash("sha256").update(content).digest("hex");
  const records = (files: Record<string, string>) => JSON.stringify({ version: 1, files });
  const cases: { name: string; records: string | undefined; want: string }[] = [
    { name: "no records", records: undefined, want: "untrusted" },
    { name: "another file", records: records({ "/other/torchlsp.toml": digest }), want: "untrusted" },
    { name: "this content", records: records({ "/w/torchlsp.toml": digest }), want: "trusted" },
    { name: "changed since", records: records({ "/w/torchlsp.toml": "sha256:00" }), want: "changed" },
    { name: "damaged records trust nothing", records: "{not json", want: "untrusted" },
  ];
  for (const c of cases) await t.test(c.name, () => assert.equal(trustState("/w/torchlsp.toml", content, c.records), c.want));
});

test("TOML as torchlsp.toml is written", async (t) => {
  await t.test("tables, dotted keys, inline tables, arrays over lines, comments", () => {
    const got = parseTOML(`# a comment
default = "gpu"   # trailing
[targets.gpu]
ssh = "root@gpu-host"
exec = [
  "pct", "exec",  # the container
  "200", "--",
]
env = { CUDA_VISIBLE_DEVICES = "0", "A.B" = 'lit\\eral' }
packages = ["torch"]
[targets."my box"]
python = "/usr/bin/python3"
targets.more.python = "never"
[targets.gpu2.env]
X = "1"
port = 22
eager = true
`);
    assert.deepEqual(got, {
      default: "gpu",
      targets: {
        gpu: {
          ssh: "root@gpu-host",
          exec: ["pct", "exec", "200", "--"],
          env: { CUDA_VISIBLE_DEVICES: "0", "A.B": "lit\\eral" },
          packages: ["torch"],
        },
        "my box": { python: "/usr/bin/python3", targets: { more: { python: "never" } } },
        gpu2: { env: { X: "1", port: 22, eager: true } },
      },
    });
  });
  await t.test("escapes in basic strings", () => {
    assert.deepEqual(parseTOML('a = "q\\"\\u00e9\\n"'), { a: 'q"é\n' });
  });
  for (const bad of ['a = "open', "[targets", "a = 1 2", "= 3"]) {
    await t.test(`refuses ${bad}`, () => assert.throws(() => parseTOML(bad), /line 1: expected/));
  }
});

test("what trusting a file lets torchlsp run", () => {
  const s = summarize(`default = "gpu"
[targets.gpu]
ssh = "root@gpu-host"
jump = ["me@bastion", "b2"]
exec = ["docker", "exec", "-i", "my trainer"]
python = "/root/venv/bin/python3"
env = { TOKEN = "secret", A = "1" }
[targets.box]
`);
  assert.deepEqual(s.targets.map((t) => t.name), ["gpu", "box"]);
  assert.equal(
    commandLine(s.targets[0]),
    "ssh -J me@bastion,b2 root@gpu-host docker exec -i 'my trainer' env A=… TOKEN=… /root/venv/bin/python3",
  );
  assert.equal(commandLine(s.targets[1]), "python3");
  const lines = describeSummary(s);
  assert.equal(lines.length, 3);
  assert.equal(lines[2], "default target: gpu");
  assert.ok(!lines.join("\n").includes("secret"), "an env value was shown");
  assert.deepEqual(describeSummary(summarize("")), ["no targets"]);
});
