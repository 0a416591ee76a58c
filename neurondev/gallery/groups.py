"""A gloo process group for the collective example: one process here, or one per rank."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from neurondev.notebook.explorer_server import free_port

__all__ = ["gloo_group", "world_name"]


@contextlib.contextmanager
def gloo_group(rank: int = 0, world_size: int = 1, *, port: int | None = None) -> Iterator[str]:
    """A gloo process group for the duration of the block (one process by default); yields its name.

    An existing default group is reused and left alone.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        yield world_name()
        return
    address = f"tcp://127.0.0.1:{port or free_port()}"
    dist.init_process_group("gloo", init_method=address, rank=rank, world_size=world_size)
    try:
        yield world_name()
    finally:
        dist.destroy_process_group()


def world_name() -> str:
    """The name of the default process group (the one ``gloo_group`` opened or found)."""
    import torch.distributed as dist

    world = dist.group.WORLD
    assert world is not None  # only called while a default group exists
    return world.group_name
