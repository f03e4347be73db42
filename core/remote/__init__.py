"""Remote hosts: jobs on other machines over one stdio protocol carried by `ssh`, `docker exec -i`
or `kubectl exec -i` (docs/remote.md): host addresses, the client (`RemoteRegistry`), the server
(`stdio_server`, shipped to the host), every host at once (`HostSet`, the dashboard's registry),
the hosts remembered, and the user's config file.

May import: the registry and supervisor rooms, and the standard library. Never the agent faces.
"""
