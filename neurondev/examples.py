"""The named catalogue of device-pin patterns used by the notebooks, tests, benchmarks and the CLI."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
from typing import Callable, Iterator

import torch

__all__ = [
    "CATALOGUE",
    "Example",
    "collective_function",
    "gloo_group",
    "get",
    "long_graph",
    "seed_function",
    "tiny_gpt2",
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


@contextlib.contextmanager
def gloo_group(rank: int = 0, world_size: int = 1, *, port: int | None = None) -> Iterator[str]:
    """A gloo process group for the duration of the block (one process by default); yields its name.

    An existing default group is reused and left alone.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        yield dist.group.WORLD.group_name
        return
    address = f"tcp://127.0.0.1:{port or _free_port()}"
    dist.init_process_group("gloo", init_method=address, rank=rank, world_size=world_size)
    try:
        yield dist.group.WORLD.group_name
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def long_graph(nodes: int, *, pins: int = 3) -> torch.fx.GraphModule:
    """A synthetic chain of ``nodes`` relus with ``pins`` evenly spaced ``torch.zeros(4, device='cpu')``
    added in: for drawing and timing large graphs (built with torch.fx, never traced)."""
    import torch.fx

    graph = torch.fx.Graph()
    value = graph.placeholder("x")
    pinned = {nodes * (k + 1) // (pins + 1) for k in range(pins)}
    for i in range(nodes):
        if i in pinned:
            value = graph.call_function(torch.add, (value, graph.call_function(torch.zeros, (4,), {"device": "cpu"})))
        else:
            value = graph.call_function(torch.relu, (value,))
    graph.output(value)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def tiny_gpt2(*, layers: int = 2, hidden: int = 64, heads: int = 2, sequence: int = 16, vocab: int = 1000):
    """A GPT-2 with random weights (no download) and its inputs: ``(model, (input_ids,), {"use_cache": False})``.

    Weights and inputs come from a private generator seed; the global RNG is left as it was.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=vocab, n_positions=max(64, sequence),
        bos_token_id=0, eos_token_id=0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).eval()
        input_ids = torch.randint(0, vocab, (1, sequence))
    return model, (input_ids,), {"use_cache": False}


@dataclasses.dataclass(frozen=True)
class Example:
    """A named pattern: ``build()`` returns ``(fn, args, kwargs)`` ready for capture/explain."""

    name: str
    description: str
    build: Callable[[], tuple[Callable, tuple, dict]]
    needs: tuple[str, ...] = ()


def _seed() -> tuple[Callable, tuple, dict]:
    generator = torch.Generator().manual_seed(0)
    return seed_function, (torch.randn(64, generator=generator),), {}


CATALOGUE: dict[str, Example] = {
    example.name: example
    for example in (
        Example("seed", "torch.empty(device=x.device) filled by copy_ (the seed document's pattern)", _seed),
        Example(
            "gpt2",
            "a tiny random-weight GPT-2 from transformers: device= kwargs and positional .to(device)",
            tiny_gpt2,
            needs=("transformers",),
        ),
    )
}


def get(name: str) -> Example:
    """The example called ``name``; KeyError listing the known names otherwise."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"no example {name!r}; known: {', '.join(CATALOGUE)}") from None
