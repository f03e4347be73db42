"""The `hermes-procs` command line (`hermes_procs.cli`): a thin client of the registry core."""
