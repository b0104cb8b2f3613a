# Fixture torch package: just enough for the gates scanner's tests.


def compile(model=None, *, mode=None, options=None):
    """Stands in for torch.compile so the scanner sees that it exists."""
    return model
