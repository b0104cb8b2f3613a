import sys
import threading

import torch
from models import fast
from workers import run

errors = []
threads = [threading.Thread(target=run, args=(fast, torch.randn(8, 64, device="cuda"), errors)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{len(errors)} of {len(threads)} threads failed" + (f": {errors[0]}" if errors else ""))
sys.exit(1 if errors else 0)
