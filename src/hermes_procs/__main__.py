"""`python -m hermes_procs`: the same as the `hermes-procs` command."""

from hermes_procs import main

main()
