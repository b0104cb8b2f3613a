from .. import config


def codegen():
    if not config.triton.cudagraphs:
        return None
    return config.ratio
