import sys
from concurrent.futures import ThreadPoolExecutor

import torch
from engine import Engine

eng = Engine()
xs = [torch.randn(8, 64, device="cuda") for _ in range(8)]
failed = []
with ThreadPoolExecutor(max_workers=4) as pool:
    futures = [pool.submit(eng.predict, x) for x in xs]
    for f in futures:
        if f.exception() is not None:
            e = f.exception()
            failed.append(f"{type(e).__name__}: {str(e)[:160]}")
print(f"{len(failed)} of {len(xs)} calls failed" + (f": {failed[0]}" if failed else ""))
sys.exit(1 if failed else 0)
