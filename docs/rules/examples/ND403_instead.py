import torch

import neurondev


def sample_scores(logits, temperature):
    return torch.softmax(logits / temperature, dim=-1)  # a tensor argument


compiled = torch.compile(sample_scores, backend="eager")
temperature = torch.tensor(0.7)
with neurondev.watch() as watched:
    for value in (0.7, 0.8, 0.9):
        temperature.fill_(value)
        compiled(torch.ones(4), temperature)
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
