import torch._inductor.config as cfg

cfg.debug = True
