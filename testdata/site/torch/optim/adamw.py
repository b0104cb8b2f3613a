from .optimizer import Optimizer


class AdamW(Optimizer):
    """Implements the AdamW algorithm."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        """Performs a single optimization step."""
        return None
