import { strict as assert } from "node:assert";
import { test } from "node:test";
import { announceNotifications, presentedKind } from "../src/protocol";

test("the notifications are announced beside other experimental capabilities", () => {
  const caps: { experimental?: unknown } = { experimental: { other: true } };
  announceNotifications(caps);
  assert.deepEqual(caps.experimental, { other: true, torchlsp: { notifications: ["torchlsp/status", "torchlsp/site"] } });
  const bare: { experimental?: unknown } = {};
  announceNotifications(bare);
  assert.deepEqual(bare.experimental, { torchlsp: { notifications: ["torchlsp/status", "torchlsp/site"] } });
});

test("runs are listed in the Quick Fix menu, filed by their own kind elsewhere", () => {
  const cases: { kind: string | undefined; only: boolean; want: string | undefined }[] = [
    { kind: "source.torchlsp.repro", only: false, want: "torchlsp.repro" },
    { kind: "source.torchlsp.explain", only: false, want: "torchlsp.explain" },
    { kind: "source.torchlsp.repro", only: true, want: "source.torchlsp.repro" },
    { kind: "quickfix", only: false, want: "quickfix" },
    { kind: "source.organizeImports", only: false, want: "source.organizeImports" },
    { kind: "source.torchlspx", only: false, want: "source.torchlspx" },
    { kind: undefined, only: false, want: undefined },
  ];
  for (const c of cases) assert.equal(presentedKind(c.kind, c.only), c.want, `${c.kind} (only: ${c.only})`);
});
