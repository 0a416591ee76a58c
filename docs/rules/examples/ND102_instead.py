import torch

import neurondev


def scaled(x):
    out = torch.zeros_like(x)  # on x's device, whatever it is
    return out + x


neurondev.check(scaled, torch.randn(64))
