import torch

import neurondev


def activated(x):
    scaled = x * 2
    squashed = torch.tanh(scaled)
    return squashed + 1


neurondev.check(activated, torch.randn(1000), select=("ND209",))  # the default tolerance: XLA's tanh is within it
