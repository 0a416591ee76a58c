import torch

import neurondev


def activated(x):
    return torch.tanh(x) * 2


torch.manual_seed(0)
neurondev.check(activated, torch.randn(1000), rtol=0.0, atol=0.0, select=("ND208",))  # exact: no tolerance
