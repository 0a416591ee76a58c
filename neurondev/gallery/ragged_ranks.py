"""A torchrun job whose last rank's shard is a sample short: its last batch is ragged and only it recompiles.

Run it as the how-to does (``docs/how-to/ranks.md``):

    torchrun --nproc-per-node 2 -m neurondev watch --json ranks.json neurondev/gallery/ragged_ranks.py
    torchrun --nproc-per-node 2 -m neurondev watch --json ranks.json neurondev/gallery/ragged_ranks.py --pad

Each rank reads its own shard (as a rank reads its own files); every rank makes the same number of steps, so
the job does not hang, but the last rank's last batch has 3 rows where the others have 4. The model runs on the
host test device (``--device cpu`` for the CPU), compiled, its gradients averaged by DDP. ``--pad`` is the fix:
the short batch padded to 4 rows, the padding weighted 0, so every rank compiles one graph. ``--fail-at 3`` makes
the last rank raise at step 3, to see what the job's report says of a failed rank.
"""

from __future__ import annotations

import argparse

import torch

__all__ = ["main"]

BATCH = 4


def main(argv: list[str] | None = None) -> list[float]:
    """Train one pass over this rank's shard; the losses of its steps."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from neurondev.devices.host.loader import host_device

    options = _options(argv)
    device = host_device() if options.device == "hostdev" else torch.device(options.device)
    dist.init_process_group()
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    data = torch.randn(4 * BATCH * size - 1, 9)
    shard = torch.tensor_split(data, size)[rank]  # the last rank's shard is one sample short
    model = torch.nn.Linear(8, 1).to(device)
    trained = DistributedDataParallel(torch.compile(model, backend="aot_eager"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step, batch in enumerate(shard.split(BATCH), 1):
        if rank == size - 1 and step == options.fail_at:
            raise RuntimeError(f"rank {rank} failed at step {step} (--fail-at)")
        weight = torch.ones(len(batch))
        if options.pad and len(batch) < BATCH:  # the fix: every batch BATCH rows, the padding weighted 0
            weight = torch.cat([weight, torch.zeros(BATCH - len(batch))])
            batch = torch.cat([batch, batch.new_zeros(BATCH - len(batch), 9)])
        batch, weight = batch.to(device), weight.to(device)
        loss = (((trained(batch[:, :8]).squeeze(1) - batch[:, 8]) ** 2) * weight).sum() / weight.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    dist.barrier()  # every rank done before the group goes
    dist.destroy_process_group()
    return losses


def _options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pad", action="store_true", help="pad the short last batch (the fix)")
    parser.add_argument("--device", default="hostdev", help="hostdev (the host test device) or cpu")
    parser.add_argument("--fail-at", type=int, default=0, metavar="STEP", help="the last rank raises at this step (a failed rank)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
