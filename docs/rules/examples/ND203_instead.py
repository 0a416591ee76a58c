import torch

import neurondev


def shifted(x):
    offsets = torch.arange(1, 5, dtype=x.dtype, device=x.device)  # made on the device
    return x + offsets


device = neurondev.host_device()
neurondev.check(shifted, torch.randn(4), target=device, select=("ND203",))
