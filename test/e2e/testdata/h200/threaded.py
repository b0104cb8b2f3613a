import threading

import torch


def f(x):
    return torch.nn.functional.relu(x @ x.T) + 1


def worker(results, i):
    compiled = torch.compile(f, mode="reduce-overhead")
    x = torch.randn(64, 64, device="cuda")
    results[i] = compiled(x)


def main():
    results = [None, None]
    threads = [threading.Thread(target=worker, args=(results, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
