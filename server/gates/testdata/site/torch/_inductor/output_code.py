from torch._inductor import config as ic


def uses_alias(is_backward):
    if is_backward and ic.triton.cudagraph_trees:
        return 1
    return 0


def unrelated(options):
    return options.debug
