import torch

import neurondev


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(64))  # a buffer: model.to(device) moves it

    def forward(self, x):
        return x * self.scale


neurondev.check(Scaled(), torch.randn(64))
