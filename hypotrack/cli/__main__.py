"""`python -m hypotrack.cli ARGS`: the same as the `hypotrack` command."""

from hypotrack.cli import main

main()
