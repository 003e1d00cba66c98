"""``python -m kvgen``: the kvgen command line (see kvgen.cli)."""

import sys

from kvgen.cli import main

sys.exit(main())
