"""`python -m testbed.cli`: the `testbed` command without testbed.launch's early lock (the tests call it this
way)."""

import sys

from . import main

sys.exit(main())
