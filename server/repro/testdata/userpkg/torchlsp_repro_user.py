"""A user's module for the repro tests: a function and its sample inputs."""
import torch


def scale_and_relu(x, y):
    return torch.relu(x * 2.0 - y)


def sample_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g)


def same_inputs():
    """The same inputs at every call, as a captured call gives them."""
    return sample_inputs(7)


def scalar_inputs():
    """Inputs with no leading dimension to vary."""
    return torch.tensor(2.0), torch.tensor(1.0)
