"""Small programs a native device syncs or copies in (tests/native/test_explain_native.py): each cost on a line of its own."""

import numpy as np
import torch


def prints(x):
    y = x * 2
    print(y)  # torch turns dispatch modes off while printing: the device's log still sees the copy
    return y + 1


def to_host(x):
    h = (x * 2).to("cpu")
    return h + 1


def as_tensor(x):
    t = torch.as_tensor(np.arange(4, dtype=np.float32), device=x.device)
    return x + t


def reads(x):
    s = x.sum().item()
    return x * s


def masks(x):
    y = x.clone()
    y[y > 0] = 0.0
    return y


def branches(x):
    if (x > 0).any():
        return x * 2
    return x
