"""What Inductor hands back for a compiled FX graph."""
from typing import Any, Callable, Optional


def cudagraphify(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def cudagraph_post_compile(compiled_graph: "CompiledFxGraph") -> None:
    """Wraps the compiled graph's callable in CUDA graphs, in place."""
    current_callable = compiled_graph.current_callable
    assert current_callable is not None
    compiled_graph.current_callable = cudagraphify(
        current_callable,
    )


class CompiledFxGraph:
    """A compiled FX graph; the object the FX graph cache hands out."""

    current_callable: Optional[Callable[..., Any]]

    def __init__(self, current_callable: Optional[Callable[..., Any]]) -> None:
        self.current_callable = current_callable

    def __call__(self, inputs: Any) -> Any:
        assert self.current_callable is not None
        return self.current_callable(inputs)
