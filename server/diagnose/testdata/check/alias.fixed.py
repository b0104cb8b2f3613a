import torch._inductor.config as cfg

cfg.autotune_local_cache = False
with cfg.patch("autotune_local_cache", True):
    pass
cfg.compile_threads = 8
