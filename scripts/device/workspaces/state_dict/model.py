from torch import nn


def build():
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())
