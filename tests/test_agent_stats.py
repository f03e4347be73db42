"""poll/list carry what the dashboard shows: awaiting_input, quiet_seconds, cpu_percent,
rss_bytes, process_count of the job's whole tree (core/supervisor/stats.py), on real processes."""

from conftest import wait_until

FIELDS = ("awaiting_input", "quiet_seconds", "cpu_percent", "rss_bytes", "process_count")


def test_poll_and_list_carry_the_figures(registry):
    sid = registry.spawn("sleep 30")["session_id"]
    # right after spawn the job may still be inside execve (no memory mapped yet: RSS 0), and
    # bash then execs sleep (another execve): keep the poll that saw the memory
    polled = wait_until(lambda: (p := registry.poll(sid))["rss_bytes"] > 100_000 and p, timeout=10)
    listed = next(j for j in registry.list() if j["session_id"] == sid)
    for entry in (polled, listed):
        assert all(name in entry for name in FIELDS), entry
    assert polled["process_count"] == 1 and polled["rss_bytes"] > 100_000
    assert polled["awaiting_input"] is False and polled["quiet_seconds"] >= 0


def test_awaiting_input_on_a_pipe_and_in_a_pty(registry):
    pipe = registry.spawn("echo ready; read answer; echo got $answer; sleep 30")["session_id"]
    pty = registry.spawn("python3 -q -i", pty=True)["session_id"]
    wait_until(lambda: registry.poll(pipe)["awaiting_input"], timeout=10)
    wait_until(lambda: registry.poll(pty)["awaiting_input"], timeout=10)
    registry.submit(pipe, "yes")
    wait_until(lambda: "got yes" in registry.poll(pipe)["output_preview"])
    assert registry.poll(pipe)["awaiting_input"] is False  # now in sleep, not reading


def test_a_reader_of_another_pipe_is_not_awaiting_input(registry):
    sid = registry.spawn("sleep 30 | cat")["session_id"]
    wait_until(lambda: registry.poll(sid)["process_count"] == 3)  # bash, sleep, cat
    assert registry.poll(sid)["awaiting_input"] is False


def test_cpu_of_a_busy_tree_and_the_count_of_its_processes(registry):
    sid = registry.spawn("(while :; do :; done) & sleep 30 & wait")["session_id"]
    wait_until(lambda: registry.poll(sid)["process_count"] == 3)
    registry.poll(sid)  # the first sample is the since-start average; the next ones are deltas
    wait_until(lambda: registry.poll(sid)["cpu_percent"] > 5, timeout=10, interval=0.3)  # the machine is shared
    idle = registry.spawn("sleep 30")["session_id"]
    wait_until(lambda: registry.poll(idle)["cpu_percent"] == 0.0, interval=0.3)


def test_quiet_seconds_grow_until_output_resets_them(registry):
    sid = registry.spawn("echo a; read x; echo b; sleep 30")["session_id"]
    wait_until(lambda: registry.poll(sid)["quiet_seconds"] >= 0.5, interval=0.05)
    registry.submit(sid, "go")
    wait_until(lambda: "b" in registry.poll(sid)["output_preview"].split())
    assert registry.poll(sid)["quiet_seconds"] < 0.5


def test_finished_job_has_zero_figures(registry):
    sid = registry.spawn("echo done")["session_id"]
    registry.wait(sid, timeout=10)
    from conftest import supervisor_gone

    supervisor_gone(registry, sid)
    polled = registry.poll(sid)
    assert (polled["awaiting_input"], polled["quiet_seconds"], polled["cpu_percent"], polled["rss_bytes"],
            polled["process_count"]) == (False, None, 0.0, 0, 0)


def test_leftover_processes_of_an_exited_job_are_counted(registry):
    sid = registry.spawn("sleep 30 &")["session_id"]
    registry.wait(sid, timeout=10)
    polled = wait_until(lambda: (p := registry.poll(sid))["rss_bytes"] > 0 and p, timeout=10)  # past execve
    assert polled["status"] == "exited" and polled["leftover_pids"]
    assert polled["process_count"] == 1 and polled["rss_bytes"] > 0
