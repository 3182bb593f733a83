"""``python -m tests.perf``: every benchmark beside its same-run anchor, in one table."""

import sys

from tests.perf.report import main

sys.exit(main())
