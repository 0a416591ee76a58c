import torch

import neurondev


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(64)  # a plain attribute: model.to(device) leaves it on the CPU

    def forward(self, x):
        return x * self.scale


neurondev.check(Scaled(), torch.randn(64))
