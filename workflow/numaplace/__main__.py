"""python -m numaplace: the same as the `numaplace` command."""
import sys

from numaplace.cli import main

sys.exit(main())
