"""The machine's timing lock (driver/study/locks.py): a timing job holds it alone, env builds share
it. Real processes contend for a real lock file: two builds hold it at once, a timing job waits for
every build to let go, and a build waits for a timing job."""
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"

HOLDER = """
import sys, time
sys.path.insert(0, {scripts!r})
from driver.study.locks import machine_lock
with machine_lock({path!r}, shared={shared}):
    print("held %.3f" % time.time(), flush=True)
    time.sleep({hold})
print("freed %.3f" % time.time(), flush=True)
"""


def holder(path, shared, hold):
    code = HOLDER.format(scripts=str(SCRIPTS), path=str(path), shared=shared, hold=hold)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def times(proc):
    out, _ = proc.communicate(timeout=60)
    got = dict(line.split() for line in out.splitlines())
    return float(got["held"]), float(got["freed"])


def started(proc):
    """Wait until `proc` holds the lock: its first line."""
    line = proc.stdout.readline().split()
    assert line[0] == "held", line
    return float(line[1])


def test_builds_share_the_lock_and_a_timing_job_holds_it_alone(tmp_path):
    lock = tmp_path / "timing.lock"
    # two builds at once: the second holds the lock while the first still does
    first = holder(lock, True, 3.0)
    started(first)
    second = holder(lock, True, 0.2)
    t_second = started(second)
    # a timing job waits until the last build lets go
    timing = holder(lock, False, 2.0)
    second.communicate(timeout=60)
    out, _ = first.communicate(timeout=60)
    freed_first = float(out.split()[-1])
    assert t_second < freed_first  # the two builds held it at once
    t_timing = started(timing)
    assert t_timing >= freed_first
    # a build started while the timing job holds the lock waits for it
    build = holder(lock, True, 0.0)
    out, _ = timing.communicate(timeout=60)
    freed_timing = float(out.split()[-1])
    held_build, _ = times(build)
    assert held_build >= freed_timing


def test_two_timing_jobs_never_overlap(tmp_path):
    """The exclusive side as it always was (and a shared=False lock taken by default)."""
    lock = tmp_path / "timing.lock"
    a = holder(lock, False, 1.0)
    t_a = started(a)
    b = holder(lock, False, 0.0)
    out, _ = a.communicate(timeout=60)
    freed_a = float(out.split()[-1])
    held_b, _ = times(b)
    assert held_b >= freed_a > t_a
