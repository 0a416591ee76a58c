# needs: torch-neuronx and a Trainium instance
import torch

import neurondev


def scaled(x):
    return torch.relu(x) * 2


neurondev.check(scaled, torch.randn(64), target=neurondev.host_device(), fallbacks="error")  # every op seen
