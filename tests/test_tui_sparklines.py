"""Resource sparklines of the selected job: the core's `output_bytes`, the sampler's history of the
ONE selected job (tui/trends.py), the block drawing (tui/sparklines.py) and the strip under the
detail title in the real app, with real jobs."""

from __future__ import annotations

import shlex
import sys
import time

import pytest
from conftest import until_async, wait_until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.sampler import Sampler
from hermes_procs.tui.sparklines import BLOCKS, TrendBar, spark
from hermes_procs.tui.trends import HISTORY, TrendRecorder

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
PY = shlex.quote(sys.executable)
# busy and chatty: burns CPU and prints a line every 20 ms
CHATTY = f"""{PY} -u -c 'import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.01: pass
    print("tick " * 20); time.sleep(0.01)'"""


def test_list_and_poll_rows_carry_output_bytes(registry):
    sid = registry.spawn("printf 12345; sleep 30")["session_id"]
    wait_until(lambda: registry.poll(sid)["output_bytes"] == 5)
    row = next(r for r in registry.list() if r["session_id"] == sid)
    assert row["output_bytes"] == 5
    done = registry.spawn("printf abc")["session_id"]
    registry.wait(done, timeout=10)
    wait_until(lambda: next(r for r in registry.list() if r["session_id"] == done).get("output_bytes") == 3)


def test_the_sampler_keeps_a_history_of_the_selected_job_only(registry):
    chatty = registry.spawn(CHATTY)["session_id"]
    quiet = registry.spawn("sleep 30")["session_id"]
    sampler = Sampler(registry, target=None, interval=0.05)
    assert sampler.sample().trend is None  # nothing selected: no history at all
    sampler.selected = chatty

    def points(n):
        data = sampler.sample()
        return data.trend if data.trend and len(data.trend.cpu) >= n else None

    # a CPU figure needs stats.MIN_INTERVAL (0.25 s) between two readings; until then a point
    # reads 0, and 4 points 50 ms apart can all come before it (failed 1 run in 6): wait for it
    trend = wait_until(lambda: (t := points(4)) and max(t.cpu) > 0 and t, timeout=15, interval=0.06)
    assert trend.session_id == chatty and trend.running
    assert max(trend.rate) > 0 and max(trend.rss) > 0 and max(trend.cpu) > 0
    assert len(trend.cpu) == len(trend.rss) == len(trend.rate)
    sampler.selected = quiet  # another job: a new history, the old one is dropped
    trend = sampler.sample().trend
    assert trend.session_id == quiet and trend.cpu == ()
    time.sleep(0.06)
    trend = sampler.sample().trend
    assert trend.session_id == quiet and len(trend.cpu) == 1 and trend.rate == (0.0,)


def test_a_sample_poked_in_between_adds_no_point(registry):
    sid = registry.spawn("sleep 30")["session_id"]
    row = next(r for r in Sampler(registry, None).sample().jobs if r.session_id == sid)
    recorder = TrendRecorder(interval=1.0)
    assert recorder.add(row, 100.0).cpu == ()  # the first look only sets where the output stood
    assert len(recorder.add(row, 101.0).cpu) == 1
    assert len(recorder.add(row, 101.2).cpu) == 1  # 0.2 s later: no new point
    for i in range(HISTORY + 10):
        trend = recorder.add(row, 102.0 + i)
    assert len(trend.cpu) == HISTORY and trend.first == 11  # the oldest dropped, counted
    assert recorder.add(None, 500.0) is None


def test_spark_blocks_scale_and_fixed_columns():
    chars, lit = spark((0.0, 50.0, 100.0), first=0, width=HISTORY, top=100.0)
    assert chars == "▁▄█" and lit == [False, True, True]
    # more samples than columns: 2 per column, the max of each, spans counted from sample 0
    chars, _ = spark((10.0, 80.0, 20.0), first=0, width=2, top=80.0)
    assert chars == "█▂"
    shifted, _ = spark((80.0, 20.0, 30.0), first=1, width=2, top=80.0)
    assert shifted == "█▃"  # sample 1 still shares a column with sample 0 (dropped): no shift
    assert spark((), 0, 10, 1.0) == ("", [])
    assert set(spark(tuple(float(i) for i in range(200)), 0, 10, 199.0)[0]) <= set(BLOCKS)


def bar_text(app) -> str:
    return str(app.query_one(TrendBar).render())


async def test_sparklines_follow_the_selected_job_in_the_strip(registry):
    chatty = registry.spawn(CHATTY, name="chatty")["session_id"]
    quiet = registry.spawn("sleep 30", name="quiet")["session_id"]
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 34)) as pilot:
        async def until(predicate, what):
            return await until_async(predicate, 15.0, what, pause=lambda: pilot.pause(0.05))

        table = app.query_one(JobsTable)
        bar = app.query_one(TrendBar)
        await until(lambda: chatty in table.rows_by_id and quiet in table.rows_by_id, "listed")
        table.select_id(chatty)
        await until(lambda: bar.trend is not None and bar.trend.session_id == chatty
                    and len(bar.trend.cpu) >= 5 and max(bar.trend.rate) > 0, "chatty's history")
        text = bar_text(app)
        assert "cpu" in text and "rss" in text and "out" in text and "/s" in text
        assert any(block in text for block in BLOCKS[1:])  # something above the baseline
        assert bar.size.height == 1
        table.select_id(quiet)
        await until(lambda: bar.trend is not None and bar.trend.session_id == quiet, "quiet's history")
        assert chatty not in {bar.trend.session_id}
        await until(lambda: len(bar.trend.cpu) >= 2, "quiet's points")
        assert max(bar.trend.rate) == 0
        registry.kill(quiet, grace=0.2)
        await until(lambda: bar.trend is not None and not bar.trend.running, "ended")
        assert "(ended)" in bar_text(app)
        assert bar.size.height == 1
