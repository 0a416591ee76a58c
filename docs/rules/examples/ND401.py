import torch

import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager")
with neurondev.watch() as watched:
    for lr in (0.1, 0.2, 0.3):
        step(torch.ones(4), lr)
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
