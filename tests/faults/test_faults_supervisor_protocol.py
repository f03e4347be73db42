"""Property test of the supervisor socket protocol: whatever arrives on a connection (JSON of
any shape, raw bytes, huge / NaN / negative numbers), the supervisor answers or closes the
connection, never dies and never hangs; the next client is served as before."""

from __future__ import annotations

import base64
import json

import pytest
from conftest import pid_alive, wait_until
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import protocol

NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 1e300, -1e300, 2**31, 2**64]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
# Ops that keep the job alive and the connection a request/reply one (no attach, no real kill).
SAFE_OPS = ["status", "write", "close_stdin", "resize", "wait", "nope", "", "STATUS"]
BAD_GRACE = st.one_of(st.sampled_from([float("nan"), float("inf"), -float("inf"), -1, 1e300, 10**400, None]),
                      st.floats(max_value=-1e-9), st.floats(min_value=1e8, allow_infinity=True),
                      st.text(max_size=5), st.lists(st.integers(), max_size=2))
REQUESTS = st.one_of(
    st.fixed_dictionaries({"op": st.sampled_from(SAFE_OPS)}, optional={
        "rows": VALUES, "cols": VALUES, "data": st.one_of(VALUES, st.binary(max_size=50).map(lambda b: b.hex())),
        "signal": st.one_of(VALUES, st.sampled_from(["WINCH", "CONT", "SIGWINCH"])), "source": VALUES}),
    st.fixed_dictionaries({"op": st.just("kill"), "grace": BAD_GRACE}),
    st.fixed_dictionaries({"op": st.just("signal"), "signal": st.one_of(VALUES, st.just("WINCH"))}),
    VALUES,
)


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _encode(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


LINES = st.lists(st.one_of(REQUESTS.map(_encode), st.binary(max_size=200).filter(lambda b: b"\n" not in b)),
                 min_size=1, max_size=4)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    reg = ProcessRegistry(home=tmp_path_factory.mktemp("protocol") / "home")
    # its terminal sends no signals: a fuzzed write may hold Ctrl-C, Ctrl-\ or Ctrl-Z (Ctrl-\ once quit it)
    started = reg.spawn("stty -isig && exec sleep 600", pty=True)
    jobdir = reg.job_dir(started["session_id"])
    proc = json.loads((jobdir / "proc.json").read_text())
    sup = proc["supervisor_pid"]
    wait_until(lambda: (jobdir / "sock").exists())
    wait_until(lambda: _cmdline(proc["pid"]).startswith(b"sleep"))  # stty has run
    yield reg, started["session_id"], jobdir, sup
    reg.kill(started["session_id"], grace=0)


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(lines=LINES)
@example(lines=[_encode({"op": "write", "data": base64.b64encode(b"\x1c\x03\x1a").decode()})])  # the signal keys
def test_supervisor_answers_or_closes_and_survives(job, lines):
    _reg, _sid, jobdir, sup = job
    payload = b"\n".join(lines) + b'\n{"op": "status"}\n'
    sock = protocol.connect(jobdir)
    sock.settimeout(10)  # a hang fails the test (socket.timeout), it does not block the suite
    try:
        try:
            sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break  # closed on us: allowed
            if not chunk:
                break
            buf += chunk
            replies = [json.loads(line) for line in buf.split(b"\n")[:-1]]
            assert all(isinstance(r, dict) and "ok" in r for r in replies)
            if any(r.get("pid") and r.get("running") is True for r in replies):  # the status behind them
                break
    except TimeoutError:
        pytest.fail(f"the supervisor neither answered nor closed for {payload[:300]!r}")
    finally:
        sock.close()
    assert pid_alive(sup), f"the supervisor died on {payload[:300]!r}"


def test_after_the_storm_the_job_is_intact(job):
    reg, sid, _jobdir, _sup = job
    assert reg.poll(sid)["status"] == "running"
    assert reg.resize(sid, 40, 100)["status"] == "ok"
