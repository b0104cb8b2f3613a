import torch._inductor.config as cfg

cfg.use_static_launcher = False
with cfg.patch("use_static_launcher", True):
    pass
cfg.compile_threads = "8"
