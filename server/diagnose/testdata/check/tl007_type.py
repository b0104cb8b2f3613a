import torch._inductor.config as cfg

cfg.debug = "1"
