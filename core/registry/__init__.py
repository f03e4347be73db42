"""The registry: the Python API over a state home (`ProcessRegistry`, docs/api.md) and the
`Registry` interface every registry implements (interface.py: each method marked as reading or
changing jobs), with what it reads and writes: job folders, logs, events, the list index,
search, the job model (`JobInfo`), live streams and attach.

May import: the supervisor room (core/supervisor/) and the standard library (bittty, lazily, for
`screen`). Never the rooms above it (remote hosts are plugged in by hermes_procs.core). Shipped
to remote hosts with the supervisor: Python 3.9.
"""
