"""neurondev inside other tools: the torch.compile backend and the pytest plugin."""
