"""Loops as users write them, for the watch tests: a training step fed a decaying float learning rate, a short last batch."""

import torch


class Regressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(x)


def make_step(model):
    def step(x, lr):
        loss = model(x).pow(2).mean()
        return loss * lr  # lr: a Python float, burned into the graph

    return step


def train(compiled, device, *, batches=(8, 8, 8, 5), lr=0.1, decay=0.9):
    """A loop over batches of the given sizes (the last one short) with a learning rate that decays each step."""
    losses = []
    for i, size in enumerate(batches):
        x = torch.arange(size * 4, dtype=torch.float32).reshape(size, 4).div(10).to(device)
        losses.append(compiled(x, lr * decay**i).item())
    return losses
