"""Dynamo, as far as the fixture needs it."""
from typing import Any

from .eval_frame import optimize, optimize_assert


def mark_dynamic(t: Any, index: int) -> None:
    """Marks dimension index of t dynamic."""
