import sys
import threading

import torch

sys.path.insert(0, "src")
from pkg.infer import infer  # noqa: E402

errors = []
threads = [threading.Thread(target=infer, args=(torch.randn(8, 64, device="cuda"), errors)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{len(errors)} of {len(threads)} threads failed" + (f": {errors[0]}" if errors else ""))
sys.exit(1 if errors else 0)
