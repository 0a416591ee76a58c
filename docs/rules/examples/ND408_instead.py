import torch

import neurondev

step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for dtype in (torch.float32, torch.float32, torch.float64):
        step(torch.ones(4, dtype=dtype).to(torch.float32))  # one dtype into the compiled code
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
