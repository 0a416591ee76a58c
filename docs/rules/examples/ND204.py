import torch

import neurondev


def normalised(x):
    return x / x.abs().max().item()  # the host waits for the device to give Python a number


device = neurondev.host_device()
neurondev.check(normalised, torch.randn(64), target=device, select=("ND204",))
