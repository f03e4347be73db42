"""The supervisor's output side: read the job's output, append it to the log (rotating it at
half the cap, counting what a write error keeps out), note when it arrived (times.idx, see
core/supervisor/timeline.py), keep its line counts (lines.idx, core/supervisor/linecounts.py: in
quiet moments, a slice at a time while output flows far ahead of them, and after the exit, so a
reader's first tail is a lookup), answer a PTY's terminal queries.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import mmap
import os
import threading
import time

import timeline
from supervisor_state import SupervisorState

LOG = "output.log"
READ_SIZE = 1 << 20  # pipe reads (the pipe holds 1 MiB)
PTY_READ_SIZE = 1 << 16  # a PTY hands out a few KiB a read
COUNT_AFTER = 1 << 20  # bytes not yet counted worth counting (linecounts.STEP: records lie a MiB apart)
COUNT_SLICE = 4 << 20  # bytes counted in one quiet moment (a few ms away from the loop)
COUNT_FAR = 4 << 20  # this much not counted: a slice is counted even while output flows (a job that
COUNT_EVERY = 0.2  # never pauses, a server logging all day), one slice per this many seconds at most
COUNT_AFTER_EXIT = 10.0  # seconds of counting after the exit at most (the rest is left to readers)
QUERY_REPLIES = ((b"\x1b[6n", b"\x1b[1;1R"), (b"\x1b[c", b"\x1b[?1;2c"), (b"\x1b[0c", b"\x1b[?1;2c"),
                 (b"\x1b[5n", b"\x1b[0n"))


class OutputLog(SupervisorState):
    def _init_output(self) -> None:
        self.log_fd = -1
        self.log_size = 0
        self._open_log()
        self.dropped = 0  # bytes rotated out by the log cap
        self.output_dropped = 0  # bytes of output that could not be stored (disk full, folder gone)
        self.write_failing = False
        # output is read into this; an anonymous map costs memory only once a read fills it
        # (a bytearray is zeroed at once: 1 MiB of every idle pipe job's PSS)
        self.buf = mmap.mmap(-1, PTY_READ_SIZE if self.pty else READ_SIZE)
        self.view = memoryview(self.buf)
        self.offset = self.log_size
        self.output_open = True
        self.log_end = self.log_size  # absolute offset of the end of the stored log
        self.times_fd = -1
        self.times_next = 0.0  # no record before this time (time.time())
        self.times_last = 0  # ms of the last record (times never go back)
        self._open_times(self.jobdir)
        self.counted_to = 0  # lines.idx holds counts up to here (absolute); -1: counting failed, stop
        self.counted_at = 0.0  # when the last slice was counted (monotonic)

    def _open_log(self) -> None:
        try:
            self.log_fd = os.open(os.path.join(self.jobdir, LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.log_size = os.fstat(self.log_fd).st_size
        except OSError as exc:  # no room for even an empty file: output is counted as dropped
            self._complain(f"cannot open the output log: {exc}")

    def _open_times(self, folder: str = "") -> None:
        """Open times.idx for appending (``folder``: the job folder until the loop moves there)."""
        try:
            self.times_fd = os.open(os.path.join(folder, timeline.TIMES_NAME),
                                    os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError:  # no times for this job; the output still goes to the log
            self.times_fd = -1

    def _note_time(self, now: float) -> None:
        """One times.idx record: output from the current end of the log on arrived now."""
        self.times_next = now + timeline.EVERY
        self.times_last = max(self.times_last, int(now * 1000))
        try:
            os.write(self.times_fd, timeline.record(self.log_end, self.times_last))
        except OSError:  # disk full: these bytes take an earlier record's time
            pass

    def _read_output(self) -> bool:
        """Read what is there into the reused buffer (no allocation per read); a PTY hands out
        ~4 KiB a read, so take several per wake-up."""
        size, ended = 0, False
        while size < len(self.buf):
            try:
                got = os.readv(self.out_fd, [self.view[size:]])
            except BlockingIOError:
                break
            except OSError:  # EIO: every holder of the PTY's other side has gone
                got = 0
            if not got:
                ended = True
                break
            size += got
            if not self.pty:
                break
        if size:
            self._append(self.view[:size])
        if ended:
            self._close_output()
        return bool(size)

    def _append(self, data: memoryview) -> None:
        """New output: to the log, to attached clients, then the checks that need the bytes."""
        if self.times_fd >= 0:
            now = time.time()
            if now >= self.times_next:
                self._note_time(now)
        stored = self._write_log(data)
        self.log_end += stored
        if stored < len(data):  # disk full or folder gone: keep the job and the live stream going
            self.output_dropped += len(data) - stored
            self.state_dirty = True
            self._schedule_retry()
        self.offset += len(data)
        for client in list(self.clients.values()):
            if client.attached:
                self._send(client, data)
        watching = self.watch and self.exit is None
        if not (self.pty or watching):
            return
        chunk = bytes(data)
        if self.pty and b"\x1b[" in chunk and not any(c.input for c in self.clients.values()):
            self._answer_queries(chunk)
        if watching:
            self._scan_watch(chunk)

    def _write_log(self, data: memoryview) -> int:
        """Append to the log and return the bytes stored; each segment holds at most half the cap,
        so the newest output stays. A write error stops here: the rest is not stored."""
        view = memoryview(data)
        half = max(1, self.cap // 2)
        stored = 0
        try:
            while view:
                if self.log_size >= half or self.log_fd < 0:
                    self._rotate()
                written = os.write(self.log_fd, view[:half - self.log_size])
                self.log_size += written
                stored += written
                view = view[written:]
            if self.write_failing:
                self.write_failing = False
                self._complain(f"the output log is writable again ({self.output_dropped} bytes dropped so far)")
        except OSError as exc:
            if not self.write_failing:
                self.write_failing = True
                self._complain(f"cannot write the output log, dropping output until it can: {exc.strerror}")
        return stored

    def _rotate(self) -> None:
        """output.log becomes output.log.1; the older half is dropped (freed off the loop).

        The new segment is created first, so a failure (no room for a file) changes nothing;
        logstate.json names the inode of the first retained segment, so a reader can tell a
        finished rotation from one under way."""
        new_fd = os.open(f".{LOG}.new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        doomed = None
        if self.log_fd >= 0:
            try:
                size = os.path.getsize(LOG + ".1")
                os.rename(LOG + ".1", f".{LOG}.1.dropped")
                self.dropped += size
                doomed = f".{LOG}.1.dropped"
            except OSError:
                pass
            try:
                os.rename(LOG, LOG + ".1")
            except OSError:
                os.close(new_fd)
                raise
            os.close(self.log_fd)
        os.rename(f".{LOG}.new", LOG)
        if doomed:  # freeing tens of MiB of blocks takes a while: not on the output path
            threading.Thread(target=unlink_quietly, args=(doomed,)).start()
        self.log_fd, self.log_size = new_fd, 0
        self._write_state()
        if doomed:
            self._prune_times()

    def _prune_times(self) -> None:
        """Drop the times of the output the cap just dropped (the index stays as small as the log)."""
        if self.times_fd < 0:
            return
        try:
            timeline.prune(timeline.TIMES_NAME, self.dropped)
        except OSError:
            return
        os.close(self.times_fd)
        self._open_times()

    def lines_behind(self) -> bool:
        """Whether a MiB or more of the log is not counted in lines.idx yet."""
        return self._uncounted() >= COUNT_AFTER

    def _uncounted(self) -> int:
        """Bytes of the retained log past lines.idx (-1 once counting stopped)."""
        return self.log_end - max(self.counted_to, self.dropped) if self.counted_to >= 0 else -1

    def lines_far_behind(self) -> bool:
        """Whether COUNT_FAR or more of the log is not counted and no slice was counted for
        COUNT_EVERY s: output that never stops for COUNT_QUIET is counted too, and a reader's
        first tail counts little itself (20 MiB/s at most; a slice holds the loop a few ms)."""
        return self._uncounted() >= COUNT_FAR and time.monotonic() - self.counted_at >= COUNT_EVERY

    def count_lines(self, budget: int | None) -> None:
        """Extend lines.idx over at most ``budget`` more bytes of the log (None: to its end).
        A cache for readers: a failure (the folder gone, no room, a count that did not move on)
        stops the counting for good, with one line in supervisor.log. A count that went back (the
        file deleted, or rewritten from an older snapshot by a reader) goes on from there."""
        try:
            import linecounts

            segments = [name for name in (LOG + ".1", LOG) if os.path.exists(name)]
            counted = linecounts.keep(".", self.dropped, segments, budget)
            if counted == self.counted_to:
                raise OSError(f"the count stayed at byte {counted}")
            self.counted_to = counted
            self.counted_at = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - e.g. a newer linecounts.py than this supervisor's code
            self.counted_to = -1
            self._complain(f"not counting the log's lines for readers: {exc}")

    def count_lines_after_exit(self) -> None:
        """The rest of the counts once every client has the exit, in slices, at nice +10 (work
        for readers that may come), until the job folder is gone or COUNT_AFTER_EXIT seconds."""
        try:
            os.nice(10)
        except OSError:
            pass
        deadline = time.monotonic() + COUNT_AFTER_EXIT
        while self.lines_behind() and time.monotonic() < deadline and os.path.exists(LOG):
            self.count_lines(COUNT_SLICE)

    def _write_state(self) -> None:
        """logstate.json: bytes rotated out, the first retained segment, output not stored."""
        state = {"dropped_bytes": self.dropped, "output_dropped": self.output_dropped}
        try:
            state["first_segment"] = os.stat(LOG + ".1").st_ino
        except OSError:
            pass
        self.state_dirty = not self._write_json("logstate.json", state)
        if self.state_dirty:
            self._schedule_retry()

    def _answer_queries(self, data: bytes) -> None:
        for query, reply in QUERY_REPLIES:
            if query in data:
                self._queue_stdin(reply)

    def _drain_output(self) -> None:
        """Read what the job already wrote, without waiting for more."""
        deadline = time.monotonic() + 0.5
        while self.output_open and time.monotonic() < deadline and self._read_output():
            pass

    def _close_output(self) -> None:
        if self.output_open:
            self.output_open = False
            self.sel.unregister(self.out_fd)
            if self.out_fd != self.in_fd or not self.stdin_open or self.exit is not None:
                os.close(self.out_fd)

    def _tail_text(self, chars: int) -> str:
        try:
            with open(LOG, "rb") as fh:
                fh.seek(max(0, self.log_size - chars * 4))
                raw = fh.read()
            import text
        except (OSError, ImportError):  # ImportError: out of descriptors
            return ""
        return text.last_chars(raw, chars)


def unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
