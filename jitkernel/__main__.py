"""`python -m jitkernel ...`: the `jitkernel` command (jitkernel.cli) without the console script."""
import sys

from jitkernel.cli import main

if __name__ == "__main__":
    sys.exit(main())
