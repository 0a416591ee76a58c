"""Devices neurondev runs on: which runtime a machine has (TorchNeuron, XLA, the host test device), and the host test device."""
