import asyncio

import torch
import torch._inductor.config as inductor_config

inductor_config.triton.cudagraphs = True


@torch.compile
def forward(x):
    return x + 1


async def main():
    return await asyncio.to_thread(forward, 3)


asyncio.run(main())
