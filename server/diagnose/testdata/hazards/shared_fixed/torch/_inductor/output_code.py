"""What Inductor hands back for a compiled FX graph.

The callable of a compiled graph is per-thread state: a graph another thread
post-compiled (wrapped in CUDA graphs) never replaces this thread's callable.
"""
import threading
from typing import Any, Callable, Optional

_callables = threading.local()


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

    def __init__(self, current_callable: Optional[Callable[..., Any]]) -> None:
        self.current_callable = current_callable

    @property
    def current_callable(self) -> Optional[Callable[..., Any]]:
        return getattr(_callables, str(id(self)), None)

    @current_callable.setter
    def current_callable(self, fn: Optional[Callable[..., Any]]) -> None:
        setattr(_callables, str(id(self)), fn)

    def __call__(self, inputs: Any) -> Any:
        assert self.current_callable is not None
        return self.current_callable(inputs)
