"""``python -m aiotf``: the command line (see ``aiotf.cli``)."""

import sys

from aiotf.cli import main

sys.exit(main(prog="python -m aiotf"))
