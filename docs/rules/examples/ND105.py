import torch

import neurondev


class Moved(torch.nn.Module):
    def forward(self, x):
        return x.to("cpu") * 2  # torch.export checks .to()'s input with aten._assert_tensor_metadata


exported = torch.export.export(Moved(), (torch.randn(4),))

neurondev.check(exported, torch.randn(4), select=("ND105",))
