"""`python -m cortex`: the same as the `cortex` command."""

from cortex.cli.main import main

main()
