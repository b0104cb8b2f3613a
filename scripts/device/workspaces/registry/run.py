import sys
import threading

import registry
import torch

errors = []


def run(name, x):
    try:
        with torch.no_grad():
            for _ in range(3):
                registry.MODELS[name](x)
        torch.cuda.synchronize()
    except Exception as e:
        errors.append(f"{type(e).__name__}: {str(e)[:160]}")


threads = [threading.Thread(target=run, args=("small", torch.randn(8, 64, device="cuda"))) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{len(errors)} of {len(threads)} threads failed" + (f": {errors[0]}" if errors else ""))
sys.exit(1 if errors else 0)
