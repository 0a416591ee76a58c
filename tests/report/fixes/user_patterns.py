"""User code whose fixes were wrong, missed or misread before (issue 20): each case is a test in test_right_fixes.py."""

import torch


def to_device_and_dtype(x):
    y = torch.arange(8).to(x.device, torch.float32)
    return x + y


def padded_mask(ids):
    mask = torch.ones(ids.shape, device=ids.device)
    return mask.masked_fill(ids == 0, 0.5)


class WithStatic(torch.nn.Module):
    @staticmethod
    def buffer(x):
        return torch.zeros(x.shape, device=x.device)

    @classmethod
    def ones(cls, x):
        return torch.ones(x.shape, device=x.device)

    def forward(self, x):
        out = self.buffer(x)
        out.copy_(x)
        return out + self.ones(x)


def likes(x):
    a = torch.empty_like(x, device=x.device)
    a.copy_(x)
    b = torch.zeros_like(x, dtype=torch.float64, device=x.device)
    c = torch.full_like(x, 2.0, device=x.device)
    d = torch.zeros(*x.shape, device=x.device)
    return a + b + c + d


class SelfDevice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(8))

    @property
    def device(self):
        return self.weight.device

    def forward(self, x):
        return x * self.weight + torch.zeros(8, device=self.device)


def fstring_device(x):
    out = torch.zeros(8, device=f"{x.device.type}")
    return out + x


def in_an_if(x):
    if torch.zeros(1, device=x.device).sum() == 0:
        return x * 2
    return x


def comment_on_device(x):
    scale = torch.full(
        (8,),
        0.5,
        device=x.device,  # NOTE: keep in sync
        dtype=torch.float32,
    )
    return x * scale


def filled(x):
    counts = torch.full((4,), 2, device=x.device)
    flags = torch.full((4,), True, device=x.device)
    zeros = torch.zeros(4, device=x.device)
    return x.sum() + counts.sum() + flags.sum() + zeros.sum()


def eye_and_list(x):
    eye = torch.eye(4, device=x.device)
    picks = torch.as_tensor([0, 2], device=x.device)
    return (x @ eye)[picks]
