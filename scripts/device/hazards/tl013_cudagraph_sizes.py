# TL013: twelve batch sizes through reduce-overhead: one CUDA graph each,
# past triton.cudagraph_dynamic_shape_warn_limit (8).
import torch

model = torch.compile(torch.nn.Linear(16, 16).cuda(), mode="reduce-overhead")
with torch.no_grad():
    for bs in [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48]:
        model(torch.randn(bs, 16, device="cuda"))
print("twelve sizes ran")
