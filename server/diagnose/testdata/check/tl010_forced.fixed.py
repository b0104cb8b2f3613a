import os

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")

import torch._inductor.config as cfg
