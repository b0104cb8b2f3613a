import torch

model = torch.compile(lambda x: x, options={"debug": True, "max_autotune": True})
