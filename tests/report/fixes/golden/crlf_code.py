"""User code saved with Windows line endings (CRLF): only the fixed statement's bytes may change."""

import torch


def buffer(x):
    out = torch.zeros(x.shape, device=x.device)  # frozen while tracing
    out.copy_(x * 2)
    return out
