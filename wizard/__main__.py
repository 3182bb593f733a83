"""``python -m gpuwizard``: the same as the ``gpuwizard`` command."""

import sys

from gpuwizard.frontends.cli import main

if __name__ == "__main__":
    sys.exit(main())
