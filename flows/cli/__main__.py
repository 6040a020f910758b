"""`python -m flows.cli`: the `threadmed` command."""

from flows.cli import main

main()
