import os

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")

import torch._inductor.config as cfg

cfg.fx_graph_cache = True
