import torch
from torch._inductor import config
from . import config as rel_config
import torch._inductor.config as inductor_config
from torch._inductor.config import triton as inductor_triton_config
from torch._inductor import cudagraph_trees

# config.debug in a comment is not a site.
DOC = "config.debug in a string is not a site"


def compile_fx(graph):
    from torch._inductor.cudagraph_trees import cudagraphify_impl

    if config.triton.cudagraph_trees:
        return cudagraphify_impl
    if config.triton.cudagraph_trees_history_recording:
        pass
    x = inductor_config.debug and 1
    y = 1 if inductor_triton_config.cudagraph_trees else 2
    assert rel_config.triton.cudagraphs, "need cudagraphs"
    cudagraph_trees.cudagraphify_impl()
    torch._inductor.cudagraph_trees.get_manager()
    while torch._inductor.config.triton.cudagraph_trees and graph:
        break
    cfg = config.triton
    if cfg.cudagraph_trees:
        pass
    return [g for g in graph if config.debug], x, y


def takes_config(config):
    return config.triton.cudagraph_trees


def local_var():
    config = {"debug": 1}
    return config.debug


class Holder:
    config = None

    def method(self):
        return config.debug


def writes():
    config.debug = True
    config.triton.cudagraph_trees = False
    setattr(config, "debug", False)
    x = getattr(config.triton, "cudagraph_trees", None)
    hasattr(config, "max_autotune")
    getattr(config, "not_a_flag", None)
    return x


@config.patch("debug", True)
def patched1():
    pass


@config.patch({"triton.cudagraph_trees": False, "max_autotune": True})
def patched2():
    pass


@config.patch(debug=True, verbose_progress=False)
def patched3():
    pass


def patched4():
    from unittest import mock

    with mock.patch.object(config.triton, "cudagraph_trees", False):
        pass


def dynamo_reads():
    from torch._dynamo import config as dynamo_config

    if dynamo_config.cudagraph_trees:
        pass


def nested_shadow():
    from torch._inductor import config as c

    def inner(c):
        return c.debug

    def inner2():
        return c.debug

    return inner, inner2
