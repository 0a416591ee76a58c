import torch

import neurondev


def step(x, training):
    return torch.dropout(x, 0.1, training)


train_step = torch.compile(lambda x: step(x, True), backend="eager")  # one compiled function per mode
eval_step = torch.compile(lambda x: step(x, False), backend="eager")
with neurondev.watch() as watched:
    for training in (True, False, True, False):
        (train_step if training else eval_step)(torch.ones(4))
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
