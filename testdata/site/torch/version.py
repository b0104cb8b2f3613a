"""Version of the fixture torch."""
from typing import Optional

__all__ = ["__version__", "cuda", "git_version"]

__version__ = "2.99.0+fixture"
cuda: Optional[str] = None
git_version = "0000000000000000000000000000000000000000"
