import torch
import torch_xla

import neurondev

x = torch.ones(4, device=torch_xla.device())
with neurondev.watch(xla_analysis=True) as watched:  # torch_xla's own analysis names each program's trigger
    for n in range(10):
        watched.step()
        x = x * 2 + 1
        if n == 3:
            x = torch.cat([x, x])  # a new shape in step 4: XLA compiles a new program
        torch_xla.sync()
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
