import torch


def save(model, path):
    torch.save(model.state_dict(), path)
