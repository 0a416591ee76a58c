import torch

import neurondev


def scaled(x):
    bias = torch.zeros_like(x)
    return torch.addcmul(bias, x, x)


neurondev.check(scaled, torch.randn(64), select=("ND207",))
