import torch

import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as watched:  # dynamo's default is 8
    for lr in (0.1, 0.2, 0.3, 0.4):
        step(torch.ones(4), lr)
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
