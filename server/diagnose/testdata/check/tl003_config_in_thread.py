import threading

import torch._inductor.config
from torch._inductor.config import triton as t


def job():
    torch._inductor.config.max_autotune = True
    with torch._inductor.config.patch("triton.cudagraphs", False):
        pass
    t.cudagraph_trees_history_recording = True


threading.Thread(target=job).start()
