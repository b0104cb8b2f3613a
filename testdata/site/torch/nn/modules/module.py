from typing import Any


class Module:
    """Base class for all neural network modules."""

    training: bool
    dump_patches: bool = False

    def __init__(self) -> None:
        self.training = True

    def forward(self, *input: Any) -> Any:
        raise NotImplementedError

    def to(self, *args, **kwargs) -> "Module":
        """Moves the parameters."""
        return self

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compiles this module's forward with torch.compile, in place."""
        import torch

        self._compiled_call_impl = torch.compile(self.__call__, *args, **kwargs)
