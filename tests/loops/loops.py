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


def accumulate(device, *, steps=12, every=4, sync=False, counts=None, read=False):
    """Gradient accumulation with SGD momentum: an optimizer step every ``every`` steps; ``sync``: a
    torch_xla.sync() at the end of each step (the advice); ``counts``: a list that gets torch_xla's
    compiles of each step, read by the loop itself (the ground truth); ``read``: the loss read on the host
    each step (``loss.item()``: the lazy graph runs there, with the optimizer's pending update after each step)."""
    import torch_xla
    import torch_xla.debug.metrics as metrics

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = torch.compile(lambda x: model(x).pow(2).mean(), backend="openxla")
    for i in range(steps):
        before = (metrics.metric_data("CompileTime") or (0,))[0]
        loss = step(torch.randn(4, 8, device=device))
        loss.backward()
        if read:
            loss.item()
        if (i + 1) % every == 0:
            opt.step()
            opt.zero_grad()
        if sync:
            torch_xla.sync()
        if counts is not None:
            counts.append((metrics.metric_data("CompileTime") or (0,))[0] - before)


class Dropper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x)).sum()


def train_and_eval(compiled, model, device, *, rounds=3):
    """A round of training then evaluation: the module's mode flips every call."""
    for _ in range(rounds):
        model.train()
        compiled(torch.ones(2, 4, device=device)).item()
        model.eval()
        compiled(torch.ones(2, 4, device=device)).item()


def validate_then_train(device, *, steps=5, sync=False):
    """One compiled validation call, then a training loop on lazy tensors that reads its loss each step (no
    torch.compile in it); ``sync``: a torch_xla.sync() after each optimizer step (the advice)."""
    import torch_xla

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    validate = torch.compile(lambda x: model(x).sum(), backend="openxla")
    validate(torch.randn(4, 8, device=device)).item()
    for _ in range(steps):
        loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if sync:
            torch_xla.sync()
        loss.item()


def growing_history(device, *, steps=14, every=4, width=4):
    """A lazy loop synced every step that appends to a history every ``every`` steps: a new program (a longer
    history) every ``every`` steps, to the end (``width``: another width, programs XLA has not compiled yet)."""
    import torch_xla

    weights, history = torch.ones(width, device=device), torch.zeros(0, device=device)
    for i in range(steps):
        weights = weights * 0.5 + 1
        if (i + 1) % every == 0:
            history = torch.cat([history, weights.sum()[None]])
        torch_xla.sync()
