import os

import torch

os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "1"
