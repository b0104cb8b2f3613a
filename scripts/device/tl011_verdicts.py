"""TL011's verdicts on the GPU host: what each shape of kept output does
under real CUDA graph trees.

Each case runs in a fresh interpreter (the CUDA graph tree is process
state) and ends in one line: "raised" (the "overwritten by a subsequent
run" error), "silent" (no error, but the kept output changed to a later
run's values), or "kept" (no error, the output still holds its own
values). The comment of each case says what TL011 says of it; the cases
of server/diagnose/testdata/cases/tl011_output_overwritten.txtar are
their reductions.

    python3 scripts/device/tl011_verdicts.py            # all cases
    python3 scripts/device/tl011_verdicts.py two_calls  # one
"""
import subprocess
import sys
import textwrap

PRELUDE = """
import torch
def verdict(kept, snapshot, read):
    try:
        read()
    except RuntimeError as e:
        if "overwritten by a subsequent run" in str(e):
            print("VERDICT raised"); return
        raise
    print("VERDICT " + ("kept" if torch.equal(kept, snapshot) else "silent"))
"""

CASES = {
    # TL011 fires: pytorch issue 170604, the first output read after the second call.
    "two_calls": """
        f = torch.compile(lambda x: torch.matmul(x, x), mode="reduce-overhead")
        x = torch.randn(10, 10, device="cuda")
        y1 = f(x); s = y1.clone()
        y2 = f(x * 2)
        verdict(y1, s, lambda: y1.sum().item())
    """,
    # quiet: pytorch issue 144386, the same on CPU tensors.
    "cpu_tensors": """
        f = torch.compile(lambda x: torch.matmul(x, x), mode="reduce-overhead")
        x = torch.randn(10, 10)
        y1 = f(x); s = y1.clone()
        y2 = f(x * 2)
        verdict(y1, s, lambda: y1.sum().item())
    """,
    # TL011 fires: torch.set_default_device("cuda") puts factory tensors on CUDA.
    "default_device": """
        torch.set_default_device("cuda")
        f = torch.compile(lambda x: torch.matmul(x, x), mode="reduce-overhead")
        x = torch.randn(10, 10)
        y1 = f(x); s = y1.clone()
        y2 = f(x * 2)
        verdict(y1, s, lambda: y1.sum().item())
    """,
    # quiet: ao test_quant_api.py:225, diffusers lora.py:733 - eager calls
    # before the name is rebound to the compiled module.
    "eager_before_rebind": """
        m = torch.nn.Linear(8, 8).cuda().eval()
        x = torch.randn(4, 8, device="cuda")
        with torch.no_grad():
            quantized = m(x); s = quantized.clone()
            m = torch.compile(m, mode="reduce-overhead")
            compiled = m(x)
            compiled = m(x * 2)
        verdict(quantized, s, lambda: quantized.sum().item())
    """,
    # quiet: ao test_nvfp4_linear.py:217 - the forward's backward is pending.
    "pending_backward": """
        layer = torch.nn.Linear(8, 8).cuda()
        compiled = torch.compile(layer, mode="reduce-overhead")
        x = torch.randn(4, 8, device="cuda", requires_grad=True)
        for _ in range(3):
            out = compiled(x)
            out.sum().backward()
            layer.zero_grad(set_to_none=True)  # a kept .grad is a kept output too:
            x.grad = None  # the next backward would accumulate into freed memory
        r1 = compiled(x); s = r1.detach().clone()
        r2 = compiled(x * 2)
        verdict(r1.detach(), s, lambda: r1.sum().item())
    """,
    # TL011 fires: a backward between the calls ends the pending state.
    "backward_between": """
        layer = torch.nn.Linear(8, 8).cuda()
        compiled = torch.compile(layer, mode="reduce-overhead")
        x = torch.randn(4, 8, device="cuda", requires_grad=True)
        history = []
        for i in range(5):
            out = compiled(x * (i + 1))
            out.sum().backward()
            layer.zero_grad(set_to_none=True)
            x.grad = None
            history.append(out)
        s = history[0].detach().clone()
        verdict(history[0].detach(), s, lambda: torch.stack(history).sum().item())
    """,
    # TL011 fires, for its true reason: ao test_integration.py:587 - a
    # second compiled object's first run frees the first one's output.
    "second_compiled_object": """
        model = torch.nn.Linear(8, 8).cuda().eval()
        x = torch.randn(4, 8, device="cuda")
        with torch.no_grad():
            model_qc = torch.compile(model, mode="reduce-overhead")
            ref_q = model_qc(x).detach(); s = ref_q.clone()
            model = torch.nn.Linear(8, 8).cuda().eval()
            model_qc = torch.compile(model, mode="reduce-overhead")
            test = model_qc(x).detach()
        verdict(ref_q, s, lambda: ref_q.sum().item())
    """,
    # TL011 fires, and torch raises nothing: ao test_quantize_2d.py:343 -
    # replays overwrite silently.
    "silent_replay": """
        compiled = torch.compile(lambda w: w.float().abs() * 2, mode="reduce-overhead")
        W = torch.randn(128, 256, device="cuda")
        for _ in range(3):
            compiled(W)
        r1 = compiled(W); s = r1.clone()
        r2 = compiled(W * 3)
        verdict(r1, s, lambda: r1.sum().item())
    """,
    # quiet: model.compile() in place after an eager call.
    "in_place_after_eager": """
        model = torch.nn.Linear(8, 8).cuda()
        x = torch.randn(4, 8, device="cuda")
        with torch.no_grad():
            y = model(x); s = y.clone()
            model.compile(mode="reduce-overhead")
            z = model(x)
            z = model(x * 2)
        verdict(y, s, lambda: y.sum().item())
    """,
}


def main(names):
    rc = 0
    for name in names or CASES:
        src = PRELUDE + textwrap.dedent(CASES[name])
        p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300)
        lines = [l for l in p.stdout.splitlines() if l.startswith("VERDICT ")]
        got = lines[-1].split(" ", 1)[1] if lines else "error: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        print(f"{name}\t{got}", flush=True)
        if not lines:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
