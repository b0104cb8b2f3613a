"""CUDA support of the fixture: never available."""


def is_available() -> bool:
    """Returns a bool indicating if CUDA is currently available."""
    return False


def device_count() -> int:
    return 0
