"""Dynamo's entry points, in the shape torch 2.x has them: optimize takes
a backend (Inductor by default) and no mode or options; torch.compile
calls it with a backend built from its own arguments."""
from typing import Any, Callable


class OptimizeContext:
    def __init__(self, backend: Any, nopython: bool = False) -> None:
        self.backend = backend
        self.nopython = nopython

    def __call__(self, fn: Callable) -> Callable:
        return fn


def optimize(*args: Any, **kwargs: Any) -> OptimizeContext:
    def rebuild_ctx() -> OptimizeContext:
        return optimize(*args, **kwargs)

    return _optimize(rebuild_ctx, *args, **kwargs)


def _optimize(
    rebuild_ctx: Callable[[], OptimizeContext],
    backend: Any = "inductor",
    *,
    nopython: bool = False,
    guard_export_fn: Any = None,
    guard_fail_fn: Any = None,
    guard_filter_fn: Any = None,
    disable: bool = False,
    dynamic: Any = None,
    package: Any = None,
) -> OptimizeContext:
    return OptimizeContext(backend, nopython=nopython)


def optimize_assert(*args: Any, **kwargs: Any) -> OptimizeContext:
    return _optimize_assert(lambda: optimize_assert(*args, **kwargs), *args, **kwargs)


def _optimize_assert(rebuild_ctx: Callable[[], OptimizeContext], backend: Any, *, dynamic: Any = None) -> OptimizeContext:
    """The same as torch._dynamo.optimize(backend, nopython=True)."""
    return OptimizeContext(backend, nopython=True)
