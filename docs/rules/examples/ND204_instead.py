import torch

import neurondev


def normalised(x):
    return x / x.abs().max()  # a tensor: the device divides, the host does not wait


device = neurondev.host_device()
neurondev.check(normalised, torch.randn(64), target=device, select=("ND204",))
