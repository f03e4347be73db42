"""The local mirror of a remote job's log (core/remote/hosts.py) and its times: what the host sends is
copied at the mirror's own offsets, and malformed or out-of-order time records are left out.
The host here is a registry-like object answering log_bytes as a host's stdio server would."""

from __future__ import annotations

from conftest import wait_until

from hermes_procs.core.remote.hosts import _Mirror
from hermes_procs.core.supervisor import timeline


class Host:
    """Answers log_bytes(sid, start, None, times=True): the output from remote offset 100 on
    (the host dropped the first 100 bytes), with the time records it has."""

    def __init__(self, records) -> None:
        self.data = b"first line\nsecond line\n"
        self.records = records

    def log_bytes(self, session_id, start, end, times=False):
        start = max(start, 100)
        data = self.data[start - 100:]
        return {"status": "exited", "start": start, "end": 100 + len(self.data), "total": 100 + len(self.data),
                "data": data, "times": self.records if data else []}


def test_the_mirror_keeps_the_hosts_times_at_its_own_offsets(tmp_path):
    hostile = [[90, 1_000_000], ["x", 5], [111, 900_000], [105, 2_000_000], [-3, 1], [111, 3_000_000, 7],
               "junk", [111, 3_000_000]]
    mirror = _Mirror(Host(hostile), "proc_x", tmp_path / "m")
    wait_until(lambda: not mirror.alive(), timeout=10)
    assert mirror.path.read_bytes() == b"first line\nsecond line\n"
    with timeline.TimeIndex(mirror.dir) as times:
        # 90 dates the first byte (offset 0 here); 111 -> 11 at a time that never goes back
        assert times.entries(0, 10) == [(0, 1000.0), (11, 1000.0)]
        assert times.time_at(11) == 1000.0
