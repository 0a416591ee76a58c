import torch

import neurondev

step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for dtype in (torch.float32, torch.float32, torch.float64):  # a new dtype: a guard none of the named causes
        step(torch.ones(4, dtype=dtype))
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
