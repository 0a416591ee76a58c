import torch

import neurondev


def scaled(x):
    y = torch.relu(x)
    print(end="")  # dynamo cannot trace a print: a second graph
    return y * 2


neurondev.check(scaled, torch.randn(64), select=("ND109",))
