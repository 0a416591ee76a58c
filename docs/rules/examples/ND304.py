import torch

import neurondev


@torch.compiler.disable  # runs eagerly, outside the compiled graphs
def add_bias(y):
    return torch.addcmul(torch.zeros(64), y, y)  # a CPU tensor meets the device's result at run time


def scaled(x):
    return add_bias(torch.relu(x)) * 2


neurondev.check(scaled, torch.randn(64), program=True)
