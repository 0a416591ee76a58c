import torch
import torch_xla

import neurondev

x = torch.ones(8, device=torch_xla.device())  # made at its final size once,
torch_xla.sync()  # and before the loop, not in its first step
with neurondev.watch(xla_analysis=True) as watched:
    for _ in range(10):
        watched.step()
        x = x * 2 + 1
        torch_xla.sync()
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
