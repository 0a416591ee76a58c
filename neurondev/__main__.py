"""python -m neurondev: the neurondev command."""

import sys

from neurondev.cli.main import main

sys.exit(main())
