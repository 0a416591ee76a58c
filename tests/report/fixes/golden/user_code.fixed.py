"""User code with device pins written in several styles (the golden input of tests/report/fixes/test_spelling.py)."""

import torch


def buffers(x):
    # an accumulator on x's device
    total = x.new_zeros(x.shape[-1], dtype=torch.get_default_dtype())  # frozen while tracing
    total.copy_(x.sum(0))
    scale = x.new_full(
        (x.shape[-1],),
        0.5,
        dtype=torch.float32,  # the last argument, on its own line
    )
    scale.add_(x.amax(0))
    return total + scale


def tables(x, index_source):
    table = x.new_tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.get_default_dtype())
    picks = x.new_tensor([0, 2], dtype=torch.int64)
    return (x * table)[:, picks] + index_source.sum()


def through_a_name(x):
    device = torch.device(x.device.type)
    where = device
    out = x.new_empty(x.shape, dtype=torch.get_default_dtype())
    out.copy_(x.exp())
    return out


def moves(x, mask):
    weights = (mask > 0).to(torch.float32)
    scores = (x @ x.T)
    moved = (mask * 2).to(x.device)
    return scores.softmax(-1).sum() + (x * weights).sum() + moved.sum()


def literal_and_unfixable(x):
    bias = x.new_zeros(x.shape[-1], dtype=torch.get_default_dtype())
    bias.copy_(x[0])
    positions = torch.arange(x.shape[-1], device=x.device)
    return bias + positions


def in_a_block(x):
    for _ in range(2):
        extra = x.new_zeros(
    x.shape[-1], dtype=torch.get_default_dtype())   # a continuation line less indented than its statement
        extra.copy_(x[0])
    return extra
