import torch

import neurondev


def scaled(x):
    y = torch.relu(x)
    return y * 2  # print after the compiled call, not inside it


neurondev.check(scaled, torch.randn(64), select=("ND109",))
