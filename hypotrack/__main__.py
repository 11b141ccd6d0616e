"""`python -m hypotrack ARGS`: the same as the `hypotrack` command."""

from hypotrack.cli import main

main()
