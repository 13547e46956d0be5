"""Run one cell in a new process of its env's Python and always leave a cell file behind.

Runs on the workflow's own Python. It waits for the machine's timing lock (no two timing jobs and
no env build at once, whatever --cores says), starts scripts/run_cell.py in the env (a fresh
interpreter, or with --workers fork a child of the env's fork helper, driver/study/forkserver.py,
which imported the framework once: config cell_workers), enforces
`cell_timeout_s` and `cell_memory_mb`, and turns a crash, hang or out-of-memory into a `failed`
cell with the reason and the tail of the log. The result is written atomically, so an interrupted
run leaves no partial file and a rerun does the cell again.

Under a time budget a process of round 0 starts only while it fits what the reserved second look
leaves (driver/study/budget.py: round0_gate, weighed once the timing lock is held, on every cell
and duet file of the machine);
one that does not is written as skipped and `not_reached`, with what was spent, without starting
the cell's process.
"""
import argparse
import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.study import (
    budget,  # noqa: E402
    layout,  # noqa: E402
    probe,  # noqa: E402
    provenance,  # noqa: E402
    record,  # noqa: E402
)
from driver.study.duet import cell_env  # noqa: E402
from driver.study.forkserver import ForkSpawner, helpers_dir, stop_helpers  # noqa: E402
from driver.study.locks import machine_lock  # noqa: E402
from tfspeed import machine, models, usermodels  # noqa: E402
from tfspeed.machine import WINDOW_END, WINDOW_START  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HEARTBEAT_S = 10
POLL_S = 1.0
# inside a cell's timed window the memory scan runs this rarely (a long fixed-count window is
# still policed)
WINDOW_SCAN_S = 10.0


def _cpu_s(pid):
    """CPU seconds (user + system, all threads) of one process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, IndexError, ValueError):
        return None


def orchestrator_pids():
    """This supervisor and its ancestors up to the outermost Snakemake process (the shell that
    Snakemake starts, Snakemake itself, its scheduler threads): the orchestrator of this cell."""
    pids, pid = [os.getpid()], os.getppid()
    chain = []
    while pid > 1:
        chain.append(pid)
        try:
            with open("/proc/%d/stat" % pid) as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    snakemake = [i for i, p in enumerate(chain) if b"snakemake" in _cmdline(p)]
    return pids + (chain[:snakemake[-1] + 1] if snakemake else chain[:1])


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


class OrchestratorMeter(object):
    """CPU the orchestrator uses during the cell's timed window (which the cell announces on
    stdout): the figure behind selfbench's `orchestrator_cpu_share`. Reading a few /proc files at
    the two window edges costs nothing inside the window."""

    def __init__(self):
        self.pids = orchestrator_pids()
        self.roles = {pid: "supervisor" if pid == os.getpid()
                      else "snakemake" if b"snakemake" in _cmdline(pid) else "shell"
                      for pid in self.pids}
        self.start = self.result = None

    def _by_role(self):
        out = {}
        for pid, role in self.roles.items():
            cpu = _cpu_s(pid)
            if cpu is not None:
                out[role] = out.get(role, 0.0) + cpu
        return out

    def on_line(self, line):
        if line == WINDOW_START:
            self.start = (time.monotonic(), self._by_role())
        elif line == WINDOW_END and self.start is not None:
            t0, c0 = self.start
            wall = time.monotonic() - t0
            c1 = self._by_role()
            roles = {role: round(c1[role] - c0.get(role, 0.0), 3) for role in c1}
            self.result = {"orchestrator_cpu_s": sum(roles.values()), "window_s": wall,
                           "orchestrator_pids": len(self.pids), "by_role": roles}


def scratch_path(out, machine):
    """The worker's own temp folder for the file `out` of a study,
    results/<stage>/<machine>/<env>/<cell>.r<rep>.json -> results/scratch/<machine>/<stage>/<env>/
    <cell>.r<rep>/ (beside `out` when it is laid out otherwise)."""
    out = os.path.abspath(out)
    env_dir = os.path.dirname(out)
    machine_dir = os.path.dirname(env_dir)
    stage_dir = os.path.dirname(machine_dir)
    job = os.path.splitext(os.path.basename(out))[0]
    if os.path.basename(machine_dir) != machine:
        return os.path.join(env_dir, ".scratch-" + job)
    return os.path.join(os.path.dirname(stage_dir), "scratch", machine, os.path.basename(stage_dir),
                        os.path.basename(env_dir), job)


@contextlib.contextmanager
def worker_scratch(out, machine, *envs):
    """Point the workers' temp folder (TMPDIR, TEMP, TMP in each of `envs`, changed in place) at a folder of
    its own under the study's results, and remove it when the block ends, success or failure.
    Why: TF's autograph writes a `__autograph_generated_file*.py` per converted function through
    `tempfile` and never removes it, so a study left thousands in /tmp."""
    folder = scratch_path(out, machine)
    shutil.rmtree(folder, ignore_errors=True)  # a killed run's leftovers
    os.makedirs(folder)
    for env in envs:
        env.update(TMPDIR=folder, TEMP=folder, TMP=folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(folder))))
        parent = os.path.dirname(folder)
        while os.path.basename(top) == "scratch" and parent.startswith(top):
            try:  # the empty folders above it, up to results/scratch itself
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)


def run_child(cmd, env, timeout_s, memory_mb, tail_lines=60, on_line=None, spawn=None):
    """Run the cell process; return (returncode, why_killed, log_tail, peak_rss_mb, origin).
    spawn: a forkserver.ForkSpawner (config cell_workers: fork), whose child of the env's helper
    runs `cmd`'s script and arguments; None: a fresh process. origin: how it was made.

    Quiet while the cell times itself: a thread blocks in waitpid (Popen.wait with a timeout
    would poll every 50 ms; a forked child, not ours to wait for, is waited for once its output
    ends), the limits are checked once a second from an Event wait, and inside the cell's timed
    window the /proc memory scan (about 3 ms) runs only every WINDOW_SCAN_S."""
    if spawn is not None:
        proc = spawn(cmd[0], cmd[1], cmd[2:], env)
    else:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc.origin = {"forked": False}
    forked = bool(proc.origin.get("forked"))
    # a forked child's output is its helper's socket; it ends when the child exits
    stream = proc.sock.makefile("rb") if forked else proc.stdout
    tail = collections.deque(maxlen=tail_lines)
    in_window, ended = threading.Event(), threading.Event()

    def pump():
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line == WINDOW_START:
                in_window.set()
            elif line == WINDOW_END:
                in_window.clear()
            if on_line is not None:
                on_line(line)
            tail.append(line)
            print(line, flush=True)

    def reap():
        if forked:
            reader.join()
        proc.wait()
        ended.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    threading.Thread(target=reap, daemon=True).start()
    start = last_beat = last_scan = time.monotonic()
    killed, peak, mem = None, 0.0, 0.0
    while not ended.wait(POLL_S):
        now = time.monotonic()
        if not in_window.is_set() or now - last_scan >= WINDOW_SCAN_S:
            mem, last_scan = machine.group_rss_mb(proc.pid), now
            peak = max(peak, mem)
        if memory_mb and mem > memory_mb:
            killed = "exceeded the memory limit of %d MB (cell_memory_mb): RSS %.0f MB" % (
                memory_mb, mem)
        elif timeout_s and now - start > timeout_s:
            killed = "timed out after %d s (cell_timeout_s)" % timeout_s
        if killed:
            os.killpg(proc.pid, signal.SIGKILL)
            ended.wait()
            break
        if now - last_beat >= HEARTBEAT_S:
            print("[tfspeed] cell still running: %.0f s, RSS %.0f MB" % (now - start, mem),
                  flush=True)
            last_beat = now
    reader.join(timeout=5)
    if forked:
        stream.close()
    return proc.returncode, killed, "\n".join(tail), peak, proc.origin


def describe_exit(code):
    if code is not None and code < 0:
        try:
            return "crashed with signal %s" % signal.Signals(-code).name
        except ValueError:
            return "crashed with signal %d" % -code
    return "exited with code %s and wrote no result" % code


def child_python(manifest, use_path_python):
    if use_path_python:  # --sdm conda: the env is activated around this job
        return shutil.which("python") or sys.executable
    return manifest["python_executable"]


def round_budget(machine, repeat):
    """(time budget, reserve) that round `repeat`'s order file states (round 0 under a budget:
    plan.order_document; the reserve: the tiers whose second look comes before round 0, config
    duets.before_cells), or (None, None)."""
    try:
        with open(layout.order_path(layout.base_machine(machine), repeat)) as handle:
            doc = json.load(handle)
        value = doc.get("time_budget_s")
    except (OSError, ValueError, AttributeError):
        return None, None
    return (None if value is None else float(value)), doc.get("reserve")


def reserve_cache(machine):
    """Where round 0's gate keeps the reserved rows of the machine's first look
    (budget.second_look_reserve_s): beside round 0's order file (published with it)."""
    order = layout.order_path(layout.base_machine(machine), 0)
    return os.path.join(os.path.dirname(order), "second_look_reserve.json")


def reserve_rows(first, reserve, gap_s):
    """The reserved rows of a first look (driver/tables/second_look.py `reserve_rows`), imported
    only when the gate computes them (pandas and scipy: once per first look, the cache after)."""
    from driver.tables.second_look import reserve_rows as rows

    return rows(first, reserve, gap_s)


def not_reached(rec, late):
    """The cell's record as not reached: skipped, with the budget, what was spent and the cost
    of the process it did not start (budget.round0_gate)."""
    each = late["cell_process"]["seconds"]
    rec.update(status="skipped", not_reached=True, time_budget=late, reason=(
        "not reached: %.1f of the time budget's %.1f min were spent%s, and a cell process "
        "takes about %s here; a run with a larger budget continues the study (the not_decided "
        "table gives the command)" % (
            late["spent_s"] / 60.0, late["time_budget_s"] / 60.0,
            " and %.1f min are held for the second look" % (late["reserved_s"] / 60.0)
            if late.get("reserved_s") else "",
            "%.1f s" % each if each == each else "an unknown time")))
    return rec


def cell_spawner(args):
    """The cell's way of making its process: a forkserver.ForkSpawner with config cell_workers
    fork (the machine's helpers folder, the duets' helpers), else None (a fresh process; always
    with --conda, whose env is activated around this job)."""
    if args.workers != "fork" or args.conda:
        return None
    return ForkSpawner(helpers_dir(args.out, args.machine))


def supervise(args):
    cell = json.loads(args.cell)
    manifest = {}
    if args.manifest:
        with open(args.manifest) as handle:
            manifest = json.load(handle)
    prov = {"machine": provenance.machine_facts(), "env": manifest,
            "code": provenance.code_facts(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "limits": {"cell_timeout_s": args.timeout_s, "cell_memory_mb": args.memory_mb}}
    usermodels.register_cell(cell)  # a user's own model or data (config `models`, `data`)
    flops = models.step_flops(cell["model"], cell["data"], cell["api"])
    rec = record.new_record(cell, args.env, args.machine, args.repeat, manifest, flops, prov)
    if manifest.get("status", "ok") != "ok":
        rec.update(status="failed", reason="env build failed: %s" % manifest.get("reason"),
                   log_tail=manifest.get("log_tail", ""))
        record.write(args.out, rec)
        return
    # Snakemake sets OMP_NUM_THREADS & co. to the job's threads (1) for every shell job: a thread
    # count no user of the framework would have. Cells get the libraries' own defaults, unless the
    # study pins a count on purpose (config `threads`), which the record then says.
    env, removed = cell_env(manifest, cell, args.threads)
    prov["thread_env_removed"] = removed
    prov["threads_pinned"] = None if args.threads == "auto" else int(args.threads)
    # the thread variables the cell runs with (not the supervisor's own, which the cell never sees)
    prov["machine"]["thread_env"] = {k: env.get(k) for k in provenance.THREAD_VARS}
    # the machine's probe this study ran before its cells (rule probe_machine), in brief
    prov["machine"]["probe"] = probe.brief(layout.probe_latest(layout.base_machine(args.machine)))
    # The cell process writes here first; only the supervisor writes into results/ (atomically).
    fd, tmp = tempfile.mkstemp(prefix="tfspeed-cell-", suffix=".json")
    os.close(fd)
    os.unlink(tmp)
    cmd = [child_python(manifest, args.conda), os.path.join(HERE, "run_cell.py"),
           "--cell", args.cell, "--rule", args.rule,
           "--framework", manifest.get("framework") or "tensorflow",
           "--foreign-cpu-max-share", str(args.foreign_cpu_max_share), "--out", tmp]
    print("[tfspeed] %s/%s repeat %d: waiting for the timing lock" % (
        args.env, rec["cell_id"], args.repeat), flush=True)
    time_budget_s, reserve = round_budget(args.machine, args.repeat)
    with machine_lock(args.lock):
        if time_budget_s is not None:
            late = budget.round0_gate(*budget.timing_files(args.machine), time_budget_s,
                                      json.loads(args.rule).get("budget_s") or 0.5,
                                      layout.base_machine(args.machine), reserve=reserve,
                                      cache=reserve_cache(args.machine), rows_of=reserve_rows)
            if late:
                record.write(args.out, not_reached(rec, late))
                print("[tfspeed] %s" % rec["reason"], flush=True)
                return
        spawn = cell_spawner(args)
        if spawn is None:
            # a fresh cell: no duet's fork helper holds memory (or wakes) while it times
            stopped = stop_helpers(helpers_dir(args.out, args.machine))
            if stopped:
                print("[tfspeed] stopped the duets' fork helpers %s" % stopped, flush=True)
        prov["load_before"] = provenance.load_average()
        t0 = time.monotonic()
        meter = OrchestratorMeter()
        with worker_scratch(args.out, args.machine, env):
            code, killed, tail, peak, origin = run_child(
                cmd, env, args.timeout_s, args.memory_mb, on_line=meter.on_line, spawn=spawn)
        rec["process_origin"] = "fork" if origin.get("forked") else "fresh"
        prov["worker"] = origin
        prov["orchestrator_cpu"] = meter.result
        prov["cell_wall_s"] = time.monotonic() - t0
        prov["load_after"] = provenance.load_average()
        # clocks and temperature after the cell: a GPU that heated up shows here
        prov["gpus_after"] = provenance.gpu_info()
    prov["peak_rss_mb"] = peak
    result = None
    if os.path.exists(tmp):
        with open(tmp) as handle:
            result = json.load(handle)
        os.unlink(tmp)
    if killed:
        rec.update(status="failed", reason=killed, log_tail=tail)
    elif result is None:
        rec.update(status="failed", reason=describe_exit(code), log_tail=tail)
    else:
        rec.update(result)
        if rec["status"] != "ok":
            rec["log_tail"] = tail
    record.write(args.out, rec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", required=True, help="the cell's axes as JSON")
    parser.add_argument("--rule", required=True, help="the stopping rule as JSON")
    parser.add_argument("--manifest", help="the env's build manifest (results/envs/...json)")
    parser.add_argument("--conda", action="store_true", help="use the activated env's python")
    parser.add_argument("--env", required=True)
    parser.add_argument("--machine", required=True)
    parser.add_argument("--repeat", type=int, default=0)
    parser.add_argument("--timeout-s", type=int, default=0)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--threads", default="auto", help="auto, or a thread count to pin")
    parser.add_argument("--foreign-cpu-max-share", type=float, required=True,
                        help="flag a cell when other processes used more CPU than this share")
    parser.add_argument("--workers", choices=("fork", "fresh"), default="fresh",
                        help="fork: a child of the env's fork helper (config cell_workers)")
    parser.add_argument("--lock", default=None, help="the machine-wide timing lock file")
    parser.add_argument("--out", required=True)
    supervise(parser.parse_args(argv))


if __name__ == "__main__":
    main()
