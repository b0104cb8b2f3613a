from torch._inductor import config


def ok_before():
    return config.debug


def broken(:
    if config.max_autotune
        pass
