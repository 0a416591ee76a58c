"""A user's model and the host test device with aten::addmm falling back, as a test harness would set it up."""

import torch

import neurondev

neurondev.host_device(fallback=["aten::addmm"])


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x).relu()
