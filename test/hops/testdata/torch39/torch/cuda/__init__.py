"""CUDA: there is none in the container."""


def is_available() -> bool:
    """Returns whether CUDA can be used: never, here."""
    return False


def device_count() -> int:
    """Returns the number of CUDA devices."""
    return 0
