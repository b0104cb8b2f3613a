# faulthandler's format, dumped from inside torch's Module.__call__.
import faulthandler
import sys
import threading
import torch

def hook(mod, args):
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)

m = torch.nn.Linear(4, 4)
m.register_forward_pre_hook(hook)
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
m(torch.randn(2, 4))
ev.set()
t.join()
