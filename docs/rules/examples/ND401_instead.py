import torch

import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager")
lr = torch.tensor(0.1)
with neurondev.watch() as watched:
    for value in (0.1, 0.2, 0.3):
        lr.fill_(value)  # a tensor the graph reads: one graph for every value
        step(torch.ones(4), lr)
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
