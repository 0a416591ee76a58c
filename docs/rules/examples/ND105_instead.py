import torch

import neurondev


class Moved(torch.nn.Module):
    def forward(self, x):
        return x * 2  # the tensor stays where the caller put it


exported = torch.export.export(Moved(), (torch.randn(4),))

neurondev.check(exported, torch.randn(4), select=("ND105",))
