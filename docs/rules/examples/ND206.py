# needs: torch-neuronx and a Trainium instance
import torch

import neurondev


def scaled(x):
    return torch.relu(x) * 2


neurondev.check(scaled, torch.randn(64), target="neuron", fallbacks="error")  # TorchNeuron compiles whole graphs
