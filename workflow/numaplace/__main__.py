"""python -m numaplace: the same as the `numaplace` command."""
import sys

from .cli import main

sys.exit(main())
