import torch

model = torch.compile(lambda x: x, mode="max-autotune", options={"debug": True})
