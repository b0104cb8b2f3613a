# A torch module called with the wrong shape from a threading.Thread worker.
import threading
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

def worker():
    model(torch.randn(2, 3))

t = threading.Thread(target=worker)
t.start()
t.join()
