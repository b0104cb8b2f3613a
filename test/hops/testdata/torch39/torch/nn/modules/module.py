"""The base class of every layer."""


class Module:
    """Base class for all neural network modules."""

    training: bool = True

    def __init__(self) -> None:
        self.training = True

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args):
        return self.forward(*args)

    def parameters(self):
        """Returns the module's parameters."""
        return [v for v in vars(self).values() if hasattr(v, "shape")]
