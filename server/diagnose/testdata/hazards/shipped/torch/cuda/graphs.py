"""Manual CUDA graph capture, shaped as torch 2.11's torch/cuda/graphs.py."""
import torch


class CUDAGraph(torch._C._CUDAGraph):
    def capture_begin(self, pool=None, capture_error_mode: str = "global"):
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)


class graph:
    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global"):
        self.capture_stream = stream if stream is not None else torch.cuda.Stream()
        self.stream_ctx = torch.cuda.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.pool = () if pool is None else (pool,)
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        torch.cuda.synchronize()
        self.stream_ctx.__enter__()
        self.cuda_graph.capture_begin(
            *self.pool,
            capture_error_mode=self.capture_error_mode,
        )

    def __exit__(self, *args: object) -> None:
        self.cuda_graph.capture_end()
        self.stream_ctx.__exit__(*args)


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False, pool=None):
    fwd_graphs = [torch.cuda.CUDAGraph() for _ in range(len(callables))]
    torch.cuda.synchronize()
    with torch.cuda.stream(torch.cuda.Stream()):
        for func, args in zip(callables, sample_args):
            for _ in range(num_warmup_iters):
                func(*args)
    torch.cuda.synchronize()
    for func, args, fwd_graph in zip(callables, sample_args, fwd_graphs):
        with torch.cuda.graph(fwd_graph, pool=pool):
            func(*args)
    return callables
