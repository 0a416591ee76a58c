"""Run by torchrun: explain the seed's collective (reduce_scatter_tensor into a buffer made with device=) on each
rank's own input on the host device; rank r saves what its explanation found to argv[1].r."""

import sys

import torch
import torch.distributed as dist

import neurondev
from neurondev.gallery.collective import expected_reduce_scatter, rank_input
from neurondev.gallery.patterns import collective_function

device = neurondev.host_device()
dist.init_process_group()
rank, size = dist.get_rank(), dist.get_world_size()
explained = neurondev.explain(collective_function(size, dist.group.WORLD.group_name), rank_input(rank, size), target="hostdev", quiet=True)


def copies(runs):
    return sorted((c.function, c.collective, c.transfers_to_host) for run in runs for c in run.host_copies)


(after,) = explained.after
found = {
    "pins": [(pin.node, pin.function, str(pin.device)) for pin in explained.pins],
    "before": copies(explained.before),
    "after": copies(explained.after),
    "values": after.comparison.matches if after.comparison is not None else None,
    "output": after.outputs[0].cpu() if isinstance(after.outputs, (list, tuple)) else after.outputs.cpu(),
    "expected": expected_reduce_scatter(rank, size),
    "program": explained.program is not None and explained.program.rewritten.ok,
}
torch.save(found, f"{sys.argv[1]}.{rank}")
dist.barrier()  # every rank done before the group goes: a rank torn down mid-exchange aborts the other (torch 2.13, gloo)
dist.destroy_process_group()
