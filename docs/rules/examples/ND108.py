import torch

import neurondev


def branchy(x):
    if x.device.type == "cpu":
        return x * 2
    return x + x


neurondev.check(branchy, torch.randn(64))  # needs torch_xla: the second trace runs on XLA
