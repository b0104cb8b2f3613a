# One TL001 variant per run: how the compile is spelled, whether the calls
# run under no_grad, how many threads. Prints failures with their last frame.
import sys
import threading
import traceback

import torch

spelling, grad, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


class Net(torch.nn.Module):
    """A module of the user's own: Dynamo skips the frames of torch.nn's
    built-in modules, so an in-place compile of nn.Linear itself never
    compiles anything (TORCH_LOGS=cudagraphs stays silent)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)

    def forward(self, x):
        return torch.relu(self.fc(x))


model = Net().cuda()
if spelling == "inplace":
    model.compile(mode="reduce-overhead")
    fn = model
else:
    fn = torch.compile(model, mode="reduce-overhead")
errors = []


def worker():
    try:
        ctx = torch.no_grad() if grad == "nograd" else torch.enable_grad()
        with ctx:
            for _ in range(8):
                fn(torch.randn(4, 32, device="cuda"))
    except Exception as e:  # noqa: BLE001
        tb = traceback.extract_tb(e.__traceback__)[-1]
        errors.append(f"{type(e).__name__} at {tb.filename.rsplit('/', 1)[-1]}:{tb.lineno}")


threads = [threading.Thread(target=worker) for _ in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{spelling} {grad} threads {n}, failed {len(errors)}: {sorted(set(errors))}")
