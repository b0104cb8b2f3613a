"""Starting afresh with CUDA graph trees between two compiled runs."""
from torch._inductor import cudagraph_trees


def fresh_start():
    cudagraph_trees.reset_cudagraph_trees()
    return cudagraph_trees.get_container(0)
