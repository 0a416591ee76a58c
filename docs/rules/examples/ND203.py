import torch

import neurondev


def shifted(x):
    offsets = torch.tensor([1.0, 2.0, 3.0, 4.0]).to(x.device)  # made on the host, copied up on every call
    return x + offsets


device = neurondev.host_device()  # the host test device: a native device counts each copy with its line
neurondev.check(shifted, torch.randn(4), target=device, select=("ND203",))
