import threading

import torch._inductor.config
from torch._inductor.config import triton as t

torch._inductor.config.max_autotune = True
t.cudagraph_trees_history_recording = True


def job():
    pass


threading.Thread(target=job).start()
