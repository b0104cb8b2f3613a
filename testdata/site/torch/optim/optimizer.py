class Optimizer:
    """Base class for all optimizers."""

    def __init__(self, params, defaults):
        self.defaults = defaults

    def step(self, closure=None):
        raise NotImplementedError
