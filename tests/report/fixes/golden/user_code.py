"""User code with device pins written in several styles (the golden input of tests/report/fixes/test_spelling.py)."""

import torch


def buffers(x):
    # an accumulator on x's device
    total = torch.zeros(x.shape[-1], device=x.device)  # frozen while tracing
    total.copy_(x.sum(0))
    scale = torch.full(
        (x.shape[-1],),
        0.5,
        dtype=torch.float32,
        device=x.device,  # the last argument, on its own line
    )
    scale.add_(x.amax(0))
    return total + scale


def tables(x, index_source):
    table = torch.tensor([1.0, 2.0, 3.0, 4.0], device=str(x.device))
    picks = torch.tensor([0, 2], device=x.device)
    return (x * table)[:, picks] + index_source.sum()


def through_a_name(x):
    device = torch.device(x.device.type)
    where = device
    out = torch.empty(x.shape, device=where)
    out.copy_(x.exp())
    return out


def moves(x, mask):
    weights = (mask > 0).to(x.device, torch.float32)
    scores = (x @ x.T).cpu()
    moved = (mask * 2).to(x.device)
    return scores.softmax(-1).sum() + (x * weights).sum() + moved.sum()


def literal_and_unfixable(x):
    bias = torch.zeros(x.shape[-1], device="cpu")
    bias.copy_(x[0])
    positions = torch.arange(x.shape[-1], device=x.device)
    return bias + positions


def in_a_block(x):
    for _ in range(2):
        extra = torch.zeros(
    x.shape[-1], device=x.device)   # a continuation line less indented than its statement
        extra.copy_(x[0])
    return extra
