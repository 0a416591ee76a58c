"""The gallery's user code: small functions and modules that place tensors on devices, each one pattern.

These are written as a user would write them; ``neurondev.examples`` names them, explains them and
stores what tracing on CPU and running on XLA does to each.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

__all__ = [
    "BufferInForward",
    "arange_positions",
    "causal_mask",
    "collective_function",
    "cpu_midway",
    "device_object",
    "full_like_scale",
    "kv_cache_step",
    "like_and_new",
    "literal_cpu",
    "no_device_upload",
    "ones_weights",
    "rotary_positions",
    "seed_function",
    "str_device",
    "tensor_table",
    "to_device_and_dtype",
    "to_other_tensors_device",
    "zeros_accumulator",
]


def seed_function(x: torch.Tensor) -> torch.Tensor:
    """The seed example: a buffer made with ``device=x.device``, filled by ``copy_``."""
    out = torch.empty(64, dtype=torch.float32, device=x.device)
    out.copy_(torch.relu(x) * 2)
    return out


def collective_function(world_size: int, group_name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The seed document's example: ``reduce_scatter_tensor`` + ``wait_tensor`` copied into a buffer."""

    def user_function(input_tensor: torch.Tensor) -> torch.Tensor:
        output = torch.empty(input_tensor.shape[0] // world_size, dtype=torch.float32, device=input_tensor.device)
        reduced = torch.ops._c10d_functional.reduce_scatter_tensor(input_tensor, "sum", world_size, group_name)
        result = torch.ops._c10d_functional.wait_tensor(reduced)
        output.copy_(result)
        return output

    return user_function


def arange_positions(x: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(x.shape[-1], device=x.device)
    return x * positions


def zeros_accumulator(x: torch.Tensor) -> torch.Tensor:
    total = torch.zeros(x.shape[-1], device=x.device)
    total.copy_(x.sum(0))
    return total * 2


def ones_weights(x: torch.Tensor) -> torch.Tensor:
    weights = torch.ones(x.shape[-1], device=x.device)
    weights.mul_(x.mean(0))
    return weights


def full_like_scale(x: torch.Tensor) -> torch.Tensor:
    scale = torch.full((x.shape[-1],), 0.5, device=x.device)
    scale.add_(x.amax(0))
    return scale


def tensor_table(x: torch.Tensor) -> torch.Tensor:
    table = torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device)
    return x * table


def str_device(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(x.shape, device=str(x.device))
    out.copy_(x + 1)
    return out


def literal_cpu(x: torch.Tensor) -> torch.Tensor:
    bias = torch.zeros(x.shape[-1], device="cpu")
    bias.copy_(x[0])
    return bias + 1


def to_other_tensors_device(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    moved = (y * 2).to(x.device)
    return x + moved


def to_device_and_dtype(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = (mask > 0).to(x.device, torch.float32)
    return x * weights


def device_object(x: torch.Tensor) -> torch.Tensor:
    device = torch.device(x.device.type)
    buffer = torch.empty(x.shape, device=device)
    buffer.copy_(x.exp())
    return buffer


def cpu_midway(x: torch.Tensor) -> torch.Tensor:
    scores = (x @ x.T).cpu()
    return scores.softmax(-1)


def causal_mask(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    mask = torch.triu(torch.ones(n, n, device=x.device), diagonal=1).bool()
    scores = x @ x.T
    return scores.masked_fill(mask, float("-inf")).softmax(-1)


def rotary_positions(x: torch.Tensor) -> torch.Tensor:
    sequence, dim = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=x.device).float() / dim))
    angles = torch.arange(sequence, device=x.device).float()[:, None] * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    first, second = x[:, 0::2], x[:, 1::2]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


def kv_cache_step(x: torch.Tensor) -> torch.Tensor:
    cache = torch.zeros(2 * x.shape[0], x.shape[1], device=x.device)
    cache[: x.shape[0]] = x
    cache[x.shape[0] :].copy_(x * 2)
    return cache / math.sqrt(x.shape[1])


class BufferInForward(torch.nn.Module):
    """A module that creates a running buffer in ``forward`` instead of registering it."""

    def __init__(self, features: int = 8) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        state = torch.zeros(x.shape[-1], device=x.device)
        state.copy_(self.linear(x).mean(0))
        return x + state


def no_device_upload(x: torch.Tensor) -> torch.Tensor:
    steps = torch.arange(x.shape[-1]).to(x)
    return x + steps


def like_and_new(x: torch.Tensor) -> torch.Tensor:
    zeros = torch.zeros_like(x)
    ones = x.new_zeros(x.shape) + 1
    scratch = torch.empty_like(x)
    scratch.copy_(x * 3)
    return zeros + ones + scratch
