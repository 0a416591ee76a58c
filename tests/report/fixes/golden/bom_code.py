"""User code saved with a UTF-8 byte order mark, which stays: déjà vu."""

import torch


def ones_like_x(x):
    w = torch.ones(x.shape[-1], device=x.device)
    return x * w
