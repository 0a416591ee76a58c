import torch

import neurondev


def normalised(x):
    h = torch.relu(x) + 1
    return h / h.max()  # torch's max: on the device


neurondev.check(normalised, torch.randn(8), program=True)
