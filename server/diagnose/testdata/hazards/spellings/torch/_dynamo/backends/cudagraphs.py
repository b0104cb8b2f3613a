"""The cudagraphs backend: CUDA graph trees without Inductor."""
from .registry import register_backend


def cudagraphs(dynamo_model, dynamo_inputs):
    from torch._inductor.cudagraph_trees import cudagraphify_impl

    return cudagraphify_impl(dynamo_model, dynamo_inputs)


register_backend(name="cudagraphs", compiler_fn=cudagraphs)
