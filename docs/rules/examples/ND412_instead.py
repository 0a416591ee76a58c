# run with: torchrun --nproc-per-node 2 -m neurondev watch docs/rules/examples/ND412_instead.py
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
step = torch.compile(lambda x: (x * 2).sum(), backend="eager", dynamic=False)
for rows in (4, 4, 4, 3 if rank == size - 1 else 4):
    batch = torch.nn.functional.pad(torch.ones(rows, 8), (0, 0, 0, 4 - rows))  # every rank: 4 rows, the padding zeros
    total = step(batch)
    dist.all_reduce(total)
dist.destroy_process_group()
