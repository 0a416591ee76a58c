import torch
import transformers

import neurondev


def sample_scores(logits, config):
    return torch.softmax(logits / config.temperature, dim=-1)  # a library object's own number


config = transformers.GenerationConfig(do_sample=True, temperature=0.7)
compiled = torch.compile(sample_scores, backend="eager")
with neurondev.watch() as watched:
    for temperature in (0.7, 0.8, 0.9):
        config.temperature = temperature
        compiled(torch.ones(4), config)
print(watched.summary())
print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])
