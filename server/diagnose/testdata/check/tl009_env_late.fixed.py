import os

os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "1"
import torch
