import torch

import neurondev


def activated(x):
    scaled = x * 2  # the same on XLA as on the CPU
    squashed = torch.tanh(scaled)  # XLA's tanh departs here, while its input agrees
    return squashed + 1


torch.manual_seed(0)
neurondev.check(activated, torch.randn(1000), rtol=0.0, atol=0.0, select=("ND209",))  # exact: no tolerance
