# TL001 through nn.Module.compile in place and a mode from a module constant:
# two threads call the module.
import threading

import torch

MODE = "reduce-overhead"


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
model.compile(mode=MODE)
errors = []


def worker():
    try:
        with torch.no_grad():
            for _ in range(8):
                model(torch.randn(4, 32, device="cuda"))
    except Exception as e:  # noqa: BLE001 - the repro counts every failure
        errors.append(f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")


threads = [threading.Thread(target=worker) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"threads 2, failed {len(errors)}" + (f": {errors[0]}" if errors else ""))
