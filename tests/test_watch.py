"""Push instead of poll (core/registry/watch.py): new jobs and exits wake the watchers at once; the
dashboard's sampler and `events --follow` use it instead of their tick."""

from __future__ import annotations

import threading

import pytest
from conftest import wait_until

from hermes_procs.core.agents.events_stream import iter_events
from hermes_procs.core.registry.watch import HomeWatch


def _started(home) -> bool:
    path = home / "events.jsonl"
    return path.exists() and b'"started"' in path.read_bytes()


def _until_woken(watch: HomeWatch, predicate) -> None:
    """Wait on the watch until `predicate()` holds; fails if a change never wakes it (a wake-up
    may be spurious, a change must not be lost)."""
    while not predicate():
        assert watch.wait(timeout=30), "no wake-up within 30 s"


@pytest.mark.parametrize("pushed", [True, False], ids=["inotify", "polling"])
def test_new_job_and_exit_wake_the_watch(registry, home, pushed):
    with HomeWatch(home, poll_interval=0.01, use_inotify=pushed) as watch:
        assert watch.pushed is pushed
        assert watch.wait(timeout=0.05) is False  # nothing happened
        job = registry.spawn("read line")
        sid = job["session_id"]
        _until_woken(watch, lambda: any(r["session_id"] == sid for r in registry.list()))
        _until_woken(watch, lambda: _started(home))
        registry.submit(sid, "go")
        _until_woken(watch, lambda: registry.poll(sid)["status"] == "exited")


def test_a_staged_job_folder_wakes_the_watch_once_it_is_in_place(registry, home):
    """A spawn makes its job folder as `jobs/.new-ID` and renames it into place: a wake-up at
    the first would have the dashboard list the jobs before the new one is there, and the
    next look comes only after the watch's gap."""
    with HomeWatch(home) as watch:
        assert watch.pushed
        staged = home / "jobs" / ".new-proc_0123456789ab"
        staged.mkdir()
        (staged / "meta.json").write_text("{}")
        assert watch.wait(timeout=0.3) is False
        staged.rename(home / "jobs" / "proc_0123456789ab")
        assert watch.wait(timeout=5) is True


def test_output_does_not_wake_the_watch(registry, home):
    # the job waits for input first (its awaiting_input event is a real change: let it pass),
    # then only prints: 20,000 lines of output are no change of state
    job = registry.spawn("read line; seq 1 20000; exec sleep 60")
    wait_until(lambda: _started(home) and b'"awaiting_input"' in (home / "events.jsonl").read_bytes())
    with HomeWatch(home) as watch:
        registry.submit(job["session_id"], "x")
        wait_until(lambda: "20000" in registry.poll(job["session_id"])["output_preview"])
        assert watch.wait(timeout=0.05) is False
    registry.kill(job["session_id"], grace=0.2)


def test_watch_of_a_missing_home_falls_back_to_polling(tmp_path):
    with HomeWatch(tmp_path / "nowhere", poll_interval=0.01) as watch:
        assert not watch.pushed
        assert watch.wait(timeout=0.03) is False
        (tmp_path / "nowhere" / "jobs").mkdir(parents=True)
        assert watch.wait(timeout=30) is True


def test_events_follow_is_pushed_not_ticked(registry):
    """With a 60 s tick, the exit event still arrives: inotify woke the follower."""
    job = registry.spawn("read line")
    stop, got = threading.Event(), []

    def follow():
        for event in iter_events(registry, "t-follow", follow=True, interval=60, stop=stop):
            got.append(event)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    wait_until(lambda: any(e.get("type") == "started" for e in got), timeout=30)
    registry.submit(job["session_id"], "go")
    wait_until(lambda: any(e.get("type") == "exited" for e in got), timeout=30)
    stop.set()


def test_dashboard_sampler_is_pushed_not_ticked(registry, home):
    """A sampler ticking once a minute still shows a new job and its exit (inotify pokes it)."""
    from hermes_procs.tui.sampler import Sampler

    class Target:
        def __init__(self) -> None:
            self.snapshots = []

        def post_message(self, message) -> None:
            self.snapshots.append(message.data)

        def status_of(self, sid):
            for snap in reversed(self.snapshots):
                for row in snap.jobs:
                    if row.session_id == sid:
                        return row.status
            return None

    target = Target()
    sampler = Sampler(registry, target, interval=60)
    sampler.start()
    try:
        wait_until(lambda: target.snapshots, timeout=30)
        job = registry.spawn("read line")
        sid = job["session_id"]
        wait_until(lambda: target.status_of(sid) == "running", timeout=30)
        registry.submit(sid, "go")
        wait_until(lambda: target.status_of(sid) == "exited", timeout=30)
    finally:
        sampler.stop()
