"""The index of finished jobs (core/registry/listindex.py): a cold list() reads it instead of every job
folder, and stays right when the index is missing, damaged, stale or written concurrently."""

from __future__ import annotations

import json
import multiprocessing
import shutil

from conftest import supervisor_gone

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import listindex
from hermes_procs.core.registry import observe as registry_mod


def _finished(registry, n: int) -> list[str]:
    ids = []
    for k in range(n):
        job = registry.spawn(f"echo job {k}")
        registry.wait(job["session_id"], timeout=30)
        supervisor_gone(registry, job["session_id"])
        ids.append(job["session_id"])
    return ids


def _count_loads(monkeypatch) -> list[str]:
    """Job folders the registry loads from now on (the work the index saves)."""
    loaded = []
    real = registry_mod.load

    def counting(jobdir, *args):
        loaded.append(jobdir.name)
        return real(jobdir, *args)

    monkeypatch.setattr(registry_mod, "load", counting)
    return loaded


def test_cold_list_reads_the_index_not_the_folders(registry, home, monkeypatch):
    ids = _finished(registry, 4)
    first = registry.list()  # builds the index
    assert {r["session_id"] for r in first} == set(ids)
    index, lines = listindex.read(home)
    assert set(index) == set(ids) and lines == 4
    loaded = _count_loads(monkeypatch)
    cold = ProcessRegistry(home=home).list()
    assert loaded == []
    assert cold == first


def test_running_job_is_loaded_and_indexed_once_finished(registry, home):
    done = _finished(registry, 1)
    job = registry.spawn("read line; echo got $line")
    registry.list()
    assert set(listindex.read(home)[0]) == set(done)  # a running job's row can still change
    registry.submit(job["session_id"], "x")
    registry.wait(job["session_id"], timeout=30)
    supervisor_gone(registry, job["session_id"])
    rows = {r["session_id"]: r for r in ProcessRegistry(home=home).list()}
    assert rows[job["session_id"]]["status"] == "exited"
    assert "got x" in rows[job["session_id"]]["output_preview"]
    assert job["session_id"] in listindex.read(home)[0]


def test_missing_or_damaged_index_is_rebuilt(registry, home):
    ids = _finished(registry, 3)
    good = registry.list()
    path = home / listindex.NAME
    path.write_bytes(b'{"session_id": "proc_000000000000", "status": "exit\n\x00garbage\n[1, 2]\n')
    assert ProcessRegistry(home=home).list() == good
    assert set(listindex.read(home)[0]) >= set(ids)
    path.unlink()
    assert ProcessRegistry(home=home).list() == good
    assert set(listindex.read(home)[0]) == set(ids)


def test_pruned_jobs_leave_the_list_and_the_index_is_compacted(registry, home, monkeypatch):
    monkeypatch.setattr(listindex, "COMPACT_SLACK", 1)
    ids = _finished(registry, 4)
    registry.list()
    for sid in ids[:3]:
        shutil.rmtree(registry.job_dir(sid))
    rows = ProcessRegistry(home=home).list()
    assert [r["session_id"] for r in rows] == ids[3:]
    index, lines = listindex.read(home)
    assert set(index) == set(ids[3:]) and lines == 1


def _list_in_child(home: str, out) -> None:
    rows = ProcessRegistry(home=home).list()
    out.put(sorted(r["session_id"] for r in rows))


def test_concurrent_cold_lists_agree_and_leave_a_whole_index(registry, home):
    ids = _finished(registry, 6)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_list_in_child, args=(str(home), out)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(r == sorted(ids) for r in results)
    for line in (home / listindex.NAME).read_bytes().splitlines():
        assert json.loads(line)["session_id"] in ids  # whole lines only, never interleaved
    assert set(listindex.read(home)[0]) == set(ids)
