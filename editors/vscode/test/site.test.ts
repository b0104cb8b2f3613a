import { strict as assert } from "node:assert";
import { test } from "node:test";
import { addPath, removePath, SiteChoice, sitePath, siteTarget } from "../src/site";

const site = "/c/torchlsp/gpu/x/site";

test("adding the site to a list setting", async (t) => {
  const cases: { name: string; ws: unknown; inherited: unknown; want: unknown }[] = [
    { name: "no value anywhere: created", ws: undefined, inherited: [], want: { value: [site], created: true } },
    { name: "the user's global entries are kept", ws: undefined, inherited: ["/mine"], want: { value: ["/mine", site], created: true } },
    { name: "appended to the workspace's own", ws: ["/a", "/b"], inherited: ["/g"], want: { value: ["/a", "/b", site], created: false } },
    { name: "already in the workspace value: the user's, untouched", ws: [site], inherited: [], want: undefined },
    { name: "already inherited: untouched", ws: undefined, inherited: [site], want: undefined },
    { name: "a value that is not a list: untouched", ws: "oops", inherited: [], want: undefined },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const got = addPath("python.analysis.extraPaths", c.ws, c.inherited, site);
      if (c.want === undefined) return assert.equal(got, undefined);
      const want = c.want as { value: string[]; created: boolean };
      assert.deepEqual(got?.change.value, want.value);
      assert.deepEqual(got?.added, { setting: "python.analysis.extraPaths", path: site, created: want.created });
    });
  }
  await t.test("an empty path adds nothing", () => assert.equal(addPath("s", undefined, [], ""), undefined));
});

test("taking out exactly what was added", async (t) => {
  const cases: { name: string; ws: unknown; inherited: unknown; created: boolean; want: unknown }[] = [
    { name: "created value goes entirely", ws: [site], inherited: [], created: true, want: { value: undefined } },
    { name: "created over the user's global: goes when only those are left", ws: ["/mine", site], inherited: ["/mine"], created: true, want: { value: undefined } },
    { name: "the user added an entry since: it stays", ws: ["/mine", site, "/new"], inherited: ["/mine"], created: true, want: { value: ["/mine", "/new"] } },
    { name: "appended: only the site goes", ws: ["/a", site], inherited: [], created: false, want: { value: ["/a"] } },
    { name: "appended to a value now empty: stays an empty list", ws: [site], inherited: [], created: false, want: { value: [] } },
    { name: "the user removed it already: nothing", ws: ["/a"], inherited: [], created: false, want: undefined },
    { name: "no workspace value: nothing", ws: undefined, inherited: [site], created: true, want: undefined },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.deepEqual(removePath(c.ws, c.inherited, { setting: "s", path: site, created: c.created }), c.want);
    });
  }
});

test("add then remove leaves the settings as they were", () => {
  for (const [ws, inherited] of [[undefined, []], [undefined, ["/g"]], [["/w"], ["/g"]], [[], []]] as [unknown, unknown][]) {
    const plan = addPath("s", ws, inherited, site);
    assert.ok(plan);
    const back = removePath(plan.change.value, inherited, plan.added);
    assert.deepEqual(back?.value, ws);
  }
});

test("the site path of a notification or a command result", () => {
  assert.equal(sitePath({ target: "gpu", path: site }), site);
  assert.equal(sitePath({ target: "gpu", path: "" }), "");
  assert.equal(sitePath({ target: "gpu", python: "p", path: site, packages: ["torch"], bytes: 1 }), site);
  assert.equal(sitePath(null), "");
  assert.equal(sitePath({ path: 3 }), "");
  assert.equal(siteTarget({ target: "gpu", path: site }), "gpu");
  assert.equal(siteTarget({ path: site }), "");
});

test("only the active target's site goes into the settings", async (t) => {
  const gpu = "/c/site/gpu-1";
  const cpu = "/c/site/cpu-2";
  // Each step: a torchlsp/site notification or the active target as the
  // extension learns it, then the site that should be in the settings.
  type Step = { announce?: [string, string]; active?: string; want: string };
  const cases: { name: string; steps: Step[] }[] = [
    { name: "the active target's site", steps: [{ active: "gpu", want: "" }, { announce: ["gpu", gpu], want: gpu }] },
    { name: "no active target known yet: the server's word", steps: [{ announce: ["gpu", gpu], want: gpu }] },
    {
      name: "a switch takes the old site out at once, then the new one comes",
      steps: [
        { active: "gpu", announce: ["gpu", gpu], want: gpu },
        { active: "cpu", want: "" },
        { announce: ["cpu", ""], want: "" },
        { announce: ["cpu", cpu], want: cpu },
      ],
    },
    {
      name: "a late site of the old target after a switch is held back",
      steps: [
        { active: "gpu", announce: ["gpu", gpu], want: gpu },
        { active: "cpu", announce: ["cpu", ""], want: "" },
        { announce: ["gpu", gpu], want: "" },
        { announce: ["cpu", cpu], want: cpu },
        { announce: ["gpu", gpu], want: "" },
      ],
    },
    {
      name: "the new target's site before the switch is known: applied once it is",
      steps: [
        { active: "gpu", announce: ["gpu", gpu], want: gpu },
        { announce: ["cpu", cpu], want: "" },
        { active: "cpu", want: cpu },
      ],
    },
    {
      name: "switching back does not bring back an old site the server withdrew",
      steps: [
        { active: "gpu", announce: ["gpu", gpu], want: gpu },
        { active: "cpu", announce: ["cpu", ""], want: "" },
        { active: "gpu", want: "" },
        { announce: ["gpu", gpu], want: gpu },
      ],
    },
    { name: "a server that names no target", steps: [{ active: "gpu", announce: ["", gpu], want: gpu }] },
    {
      name: "the server restarted: its first site counts before its status",
      steps: [{ active: "gpu", announce: ["gpu", gpu], want: gpu }, { active: "", announce: ["cpu", cpu], want: cpu }],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const choice = new SiteChoice();
      c.steps.forEach((s, i) => {
        if (s.active !== undefined) choice.setActive(s.active);
        if (s.announce) choice.announce(...s.announce);
        assert.equal(choice.current().path, s.want, `step ${i + 1}`);
      });
    });
  }
  await t.test("the target handed with a site is its own", () => {
    const choice = new SiteChoice();
    choice.setActive("gpu");
    choice.announce("gpu", gpu);
    assert.deepEqual(choice.current(), { target: "gpu", path: gpu });
  });
  await t.test("setActive says whether the active target changed", () => {
    const choice = new SiteChoice();
    assert.equal(choice.setActive(undefined), false);
    assert.equal(choice.setActive("gpu"), true);
    assert.equal(choice.setActive("gpu"), false);
    assert.equal(choice.setActive("cpu"), true);
    assert.equal(choice.setActive(undefined), true);
  });
});
