"""Compiles the model once and serves it from two worker threads."""
import threading

import torch

from tinygpt.model import TinyGPT


def make_batch(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 64, (2, 16), generator=g),)


def main():
    torch.manual_seed(0)
    model = TinyGPT().eval()
    compiled = torch.compile(model, mode="reduce-overhead")

    def work(t):
        for i in range(3):
            compiled(torch.randint(0, 64, (3, 12)))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
