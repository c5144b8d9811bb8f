"""Client processes for bench/client: spawned in their own process group, bounded in time,
measured by wait4 (user + system CPU, peak RSS).

Why this exists apart from bench.py: how a client's cost is read off the kernel (and the
ru_maxrss floor inherited at exec) is one concern, kept in one place.
"""
import os
import re
import resource
import signal
import subprocess
import time
from dataclasses import dataclass

LIVE_GROUPS = set()  # process groups of running clients, killed on any exit


@dataclass
class Proc:
    wall: float
    cpu: float
    rss_kib: int
    exit: int
    hung: bool
    spawned_ms: float
    stdout: str
    stderr: str

    @property
    def rss_mib(self):
        return None if self.rss_kib is None else self.rss_kib / 1024


def run_bounded(argv, timeout, log_stem, on_tick=None):
    """Runs argv in its own process group; kills it after `timeout` s (SIGTERM, then SIGKILL
    5 s later). Returns wall time, user+system CPU from wait4's rusage, and peak RSS."""
    out_path, err_path = log_stem + ".out", log_stem + ".err"
    floor_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm_kib = 0
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        spawned_ms = time.time() * 1000
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    LIVE_GROUPS.add(proc.pid)
    term_at = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        elapsed = time.monotonic() - start
        if term_at is None and elapsed > timeout:
            term_at = elapsed
            signal_group(proc.pid, signal.SIGTERM)
        elif term_at is not None and elapsed > term_at + 5:
            signal_group(proc.pid, signal.SIGKILL)
        hwm_kib = max(hwm_kib, proc_status_kib(proc.pid, "VmHWM") or 0)
        if on_tick:
            on_tick(proc.pid, elapsed)
        time.sleep(0.05)
    wall = time.monotonic() - start
    LIVE_GROUPS.discard(proc.pid)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Proc(wall, usage.ru_utime + usage.ru_stime, peak_rss_kib(usage.ru_maxrss, floor_kib, hwm_kib),
                proc.returncode, term_at is not None, spawned_ms, read_text(out_path), read_text(err_path))


def peak_rss_kib(ru_maxrss, floor_kib, hwm_kib):
    """The client's peak RSS. Linux carries the spawning mm's high-water mark into the child's
    ru_maxrss at exec, so ru_maxrss is never below this Python process's own peak (floor_kib):
    above it, it is the client's exact peak; at it, the client's VmHWM, polled while it ran."""
    if ru_maxrss > floor_kib:
        return ru_maxrss
    return hwm_kib or None


def proc_status_kib(pid, field):
    """A kB field (VmRSS, VmHWM) of /proc/PID/status, None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            found = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def kill_live_groups():
    for pgid in list(LIVE_GROUPS):
        signal_group(pgid, signal.SIGKILL)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def first_error_line(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"error|fail|refused|invalid", line, re.I)]
    line = (errors or lines or ["no output"])[0].replace("|", "/")
    return line if len(line) <= 100 else line[:99] + "…"
