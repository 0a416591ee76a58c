import torch

import neurondev


def scaled(x):
    y = torch.relu(x)
    return y * y.sum()  # the total stays on the device


device = neurondev.host_device()
neurondev.check(scaled, torch.randn(64), target=device, select=("ND202",))
