"""`python -m testbed.cli`: the `testbed` command (the link watcher daemon is started this way)."""

import sys

from . import main

sys.exit(main())
