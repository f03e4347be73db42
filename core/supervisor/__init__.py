"""The supervisor program: one small process per job (`python -I -S supervisor.py ...`) that owns
the job's PTY or pipes, writes its output and exit to disk and serves its socket; the warm
template that forks them; and the stdlib modules it shares with the registry (the sanitiser
`text`, `proctree`, `stats`, `timeline`, `wire`, `bounds`).

May import: the standard library only (and ptyprocess, for PTY jobs). A supervisor's folder is
its whole world: inside one, these modules import each other by plain name (`import wire`);
imported as a package (by the registry), they do not import each other at the top, or do it
both ways (stats.py). Runs on Python 3.9 (it is shipped to remote hosts). Nothing above it is
imported here.
"""
