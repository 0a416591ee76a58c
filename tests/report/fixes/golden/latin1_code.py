# -*- coding: latin-1 -*-
"""User code in latin-1, as its cookie says: grüße, café (read and written in its own encoding)."""

import torch


def scaled(x):
    # the facteur (échelle) on x's device
    scale = torch.full(x.shape, 0.5, device=x.device)  # échelle
    return x * scale
