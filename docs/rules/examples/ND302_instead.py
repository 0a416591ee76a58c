import torch
import torch_xla

import neurondev


def noisy(x):
    return x + torch.randn(64, device=x.device)  # the device said, not assumed


torch.set_default_device(torch_xla.device())
neurondev.check(noisy, torch.randn(64), program=True)
