"""`python -m cortex`: the same as the `cortex` command."""

from cortex.cli import main

main()
