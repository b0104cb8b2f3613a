"""torch.compiler, as far as the fixture needs it."""
from typing import Any

import torch


def compile(*args: Any, **kwargs: Any) -> Any:
    """See torch.compile for details on the arguments for this function."""
    return torch.compile(*args, **kwargs)
