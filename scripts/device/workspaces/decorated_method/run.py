import sys
import threading

import torch
from model import Stepper

errors = []
threading.excepthook = lambda args: errors.append(f"{args.exc_type.__name__}: {str(args.exc_value)[:160]}")

s = Stepper()
threads = [threading.Thread(target=s.step, args=(torch.randn(8, 64, device="cuda"),)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
torch.cuda.synchronize()
print(f"{len(errors)} of {len(threads)} threads failed" + (f": {errors[0]}" if errors else ""))
sys.exit(1 if errors else 0)
