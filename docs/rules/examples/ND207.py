import torch

import neurondev


def scaled(x):
    bias = torch.zeros(64, device="cpu")
    return torch.addcmul(bias, x, x)


neurondev.check(scaled, torch.randn(64), select=("ND207",))  # runs the graph traced on CPU on XLA
