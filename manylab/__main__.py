"""`python -m manylab`: the same as the `manylab` command."""
import sys

from manylab.cli import main

sys.exit(main())
