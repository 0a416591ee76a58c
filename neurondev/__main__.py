"""python -m neurondev: the neurondev command."""

import sys

from neurondev.cli.command import main

if __name__ == "__main__":
    sys.exit(main())
