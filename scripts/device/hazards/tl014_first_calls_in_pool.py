# TL014 (and TL001): a reduce-overhead model whose first calls come from a
# pool of four threads. Counts failures and wrong answers against eager.
from concurrent.futures import ThreadPoolExecutor

import torch

torch.manual_seed(0)
eager = torch.nn.Linear(64, 64).cuda()
model = torch.compile(eager, mode="reduce-overhead")
xs = [torch.randn(8, 64, device="cuda") for _ in range(64)]


def call(x):
    with torch.no_grad():
        return (model(x).clone() - eager(x)).abs().max().item()


errors, wrong = 0, 0
with ThreadPoolExecutor(4) as pool:
    for fut in [pool.submit(call, x) for x in xs]:
        try:
            wrong += fut.result() > 1e-3
        except Exception as e:  # noqa: BLE001 - the repro counts every failure
            errors += 1
            last = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
print(f"calls 64, exceptions {errors}, wrong {wrong}" + (f", last: {last}" if errors else ""))
