import torch

import neurondev


def scaled(x):
    y = torch.relu(x)
    total = y.sum().cpu()  # a copy to the host in the middle of the program
    return y * total.to(x.device)


device = neurondev.host_device()  # the host test device: a native device counts each copy with its line
neurondev.check(scaled, torch.randn(64), target=device, select=("ND202",))
