from concurrent.futures import ThreadPoolExecutor

import torch


@torch.compile(mode="max-autotune")
def forward(x):
    return x + 1


def handle(request):
    return forward(request)


with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(handle, range(8)))
