"""python -m neurondev: the neurondev command."""

import sys

from neurondev.cli.command import main

sys.exit(main())
