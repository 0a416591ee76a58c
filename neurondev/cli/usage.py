"""What every verb of the command shares: the exit codes, the usage error (one line, exit 2) and the help of
``--target``."""

from __future__ import annotations

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "TARGET_HELP", "UsageError"]


EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A problem the user can fix from the command line: said in one line, exit status 2."""


TARGET_HELP = (
    "the device pins are rewritten to and runs go to: xla, xla:N, neuron (TorchNeuron), hostdev (the host test device); "
    "default: this machine's own (neurondev doctor says which)"
)
