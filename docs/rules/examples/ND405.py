import torch

import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for size in (8, 8, 5, 8):  # a short batch
        step(torch.ones(size))
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
