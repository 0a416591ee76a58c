import torch
import torch_xla

import neurondev


def noisy(x):
    return x + torch.randn(64)  # a factory call: the default device should apply to it


torch.set_default_device(torch_xla.device())  # every factory call on XLA, as the program expects
neurondev.check(noisy, torch.randn(64), program=True)
