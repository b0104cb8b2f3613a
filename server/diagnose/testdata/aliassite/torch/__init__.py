"""A torch-shaped tree with aliased config flags."""
from torch.version import __version__ as __version__


def compile(model=None, *, mode=None, options=None):
    """Stands in for torch.compile."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    return model
