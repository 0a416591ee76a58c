import torch

import neurondev


def branchy(x):
    return x * 2  # one program for every device


neurondev.check(branchy, torch.randn(64))
