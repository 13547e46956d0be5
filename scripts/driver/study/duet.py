"""Paired runs: two long-lived cell workers that take turns, window by window.

Why (docs/design.md, "Duets"): on a shared VM most of the spread between processes is the state of
the machine, which wanders over seconds to minutes; two processes run one after the other share
only about half of it. A duet starts one worker per side (scripts/run_cell.py --serve, a fresh
process of each side's env), builds and warms both up, then alternates timed windows A B B A A B
... so that both sides sample the same machine states within a fraction of a second. What is left
between duets is what belongs to a process and a build, which fresh duets replicate.

The worker protocol is run_cell.py's `serve`; this module is its driver-side end, and the one
place that sets up a cell process's environment (supervise_cell.py uses `cell_env` too).
"""
import json
import os
import select
import subprocess
import time

from tfspeed.machine import ORCHESTRATOR_THREAD_VARS, PINNED_VAR, group_rss_mb

SERVE_PREFIX = "@@tfspeed"


def cell_env(manifest, cell, threads, base=None):
    """The environment of a cell process: the orchestrator's thread variables removed (threads
    'auto': what a user gets) or pinned on purpose, the env's own variables, no GPU for a CPU
    cell. Returns (env, removed)."""
    env = dict(os.environ if base is None else base)
    removed = {k: env.pop(k) for k in ORCHESTRATOR_THREAD_VARS if k in env}
    env.pop(PINNED_VAR, None)
    if threads != "auto":
        for key in ORCHESTRATOR_THREAD_VARS + (PINNED_VAR,):
            env[key] = str(threads)
    env.update(manifest.get("variables") or {})
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    if cell["device"] == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU cell must not touch a GPU that is present
    return env, removed


class WorkerError(RuntimeError):
    """A worker died, timed out or answered something else than the protocol expects."""


def fresh_spawn(python, run_cell, args, env, prefix=()):
    """A fresh worker process: the env's Python running run_cell.py with `args`, in a session
    of its own (its process group is what the meters and the memory police read). Its `origin`
    says how it was made (a fork helper's workers say forked: driver/study/forkserver.py)."""
    proc = subprocess.Popen(list(prefix) + [python, run_cell] + list(args), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    proc.origin = {"forked": False}
    return proc


class Worker(object):
    """One side of a duet: a process of the env's Python running run_cell.py --serve, fresh
    (fresh_spawn) or forked from the env's fork helper (`spawn`: a forkserver.ForkSpawner)."""

    def __init__(self, python, run_cell, cell, rule, framework, env, timeout_s=600, log=None,
                 memory_mb=0, prefix=(), wait_build=False, partner=None, extra=(), spawn=None):
        self.cell, self.timeout_s, self.log = cell, timeout_s, log
        self.memory_mb, self.peak_rss_mb, self._scanned = memory_mb, 0.0, 0.0
        args = ["--serve", "--cell", json.dumps(cell, sort_keys=True),
                "--rule", json.dumps(rule, sort_keys=True), "--framework", framework,
                "--foreign-cpu-max-share", "1"] + (["--wait-build"] if wait_build else [])
        # more cells in this same process (run_cell.py serve): the partner, then `extra`
        for other in ([partner] if partner is not None else []) + list(extra):
            args += ["--partner", json.dumps(other, sort_keys=True)]
        self.started = time.monotonic()
        self.proc = (spawn or fresh_spawn)(python, run_cell, args, env, prefix)
        self.origin = getattr(self.proc, "origin", {"forked": False})
        self.tail = []
        # each timed window's CPU meter (tfspeed/machine.py CpuWindow), in order, per cell of
        # the process (1: the partner's)
        self.cpu_of = {0: [], 1: []}
        self.cpu = self.cpu_of[0]

    def police_memory(self):
        """Kill the worker when its resident memory (its whole process group) is above
        `memory_mb` (config cell_memory_mb; 0: no limit). Called while it builds and between
        windows, never while a window times (the scan reads /proc)."""
        rss = group_rss_mb(self.proc.pid)
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        if self.memory_mb and rss > self.memory_mb:
            self.kill()
            raise WorkerError("worker exceeded the memory limit of %d MB (cell_memory_mb): RSS "
                              "%.0f MB" % (self.memory_mb, rss))

    def expect(self, tag, also=()):
        """Read lines until the protocol line `tag`; return its payload. While it waits for
        `ready` or `loaded` (a build, an import), the worker's memory is checked every second,
        and so is that of the workers in `also` (the other side, importing meanwhile)."""
        deadline = time.monotonic() + self.timeout_s
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError("worker timed out waiting for %r; log tail:\n%s"
                                  % (tag, "\n".join(self.tail[-20:])))
            building = tag in ("ready", "loaded")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0) if building else left)
            if building and time.monotonic() - self._scanned >= 1.0:  # a /proc scan a second
                self._scanned = time.monotonic()
                self.police_memory()
                for other in also:
                    other.police_memory()
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except ConnectionResetError:  # a forked worker's socket: its peer died
                chunk = b""
            if not chunk:
                self.proc.wait()
                raise WorkerError("worker exited (code %s) waiting for %r; log tail:\n%s"
                                  % (self.proc.returncode, tag, "\n".join(self.tail[-20:])))
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace")
                parts = line.split(" ", 2)
                if parts[0] == SERVE_PREFIX and len(parts) == 3:
                    if parts[1] != tag:
                        raise WorkerError("worker said %r, expected %r" % (parts[1], tag))
                    if buf:  # nothing follows a reply before the next command
                        self.tail.append(buf.decode("utf-8", "replace"))
                    return json.loads(parts[2])
                self.tail.append(line)
                if self.log is not None:
                    self.log.write(line + "\n")

    def send(self, command):
        try:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone: the next expect says how it ended

    def window(self, seconds, which=0, settle=None):
        """One timed window of cell `which` (1: the partner), after `settle` untimed calls
        (None: the worker's default, run_cell.SETTLE)."""
        if settle is not None:
            self.send("window %g %d %d" % (seconds, which, settle))
        else:
            self.send("window %g %d" % (seconds, which) if which else "window %g" % seconds)
        reply = self.expect("window")
        self.cpu_of[which].append(reply.get("cpu"))
        self.police_memory()
        return reply["samples_s"]

    def mix(self, seconds, block):
        """Cells in one process: all interleaved in blocks of `block` calls for about
        `seconds`; returns each cell's samples, cell 0 (its own) first."""
        self.send("mix %g %d" % (seconds, block))
        reply = self.expect("mix")
        self.cpu_of[0].append(reply.get("cpu"))
        self.police_memory()
        return tuple(reply["samples_s"])

    def build(self):
        """After `loaded` (wait_build): build and warm up now; the `ready` payload."""
        self.send("build")
        return self.expect("ready")

    def rebuild(self):
        self.send("rebuild")
        return self.expect("ready")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        return time.monotonic() - self.started

    def kill(self):
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait()


class Partner(object):
    """The partner side of a pair held in one process: its windows are the worker's cell 1."""

    def __init__(self, worker):
        self.worker = worker
        self.cpu = worker.cpu_of[1]

    def window(self, seconds, settle=None):
        return self.worker.window(seconds, 1, settle)

    def close(self):
        return self.worker.close()

    def kill(self):
        self.worker.kill()

    @property
    def peak_rss_mb(self):
        return self.worker.peak_rss_mb


def abba(k):
    """Which side goes first in window pair k: A B, B A, B A, A B, ... (a linear drift falls on
    both sides alike)."""
    return ("a", "b") if k % 4 in (0, 3) else ("b", "a")


def alternate(workers, windows, window_s, settle=None):
    """Take `windows` timed windows of each worker in ABBA turns, each after `settle` untimed
    calls (None: the worker's default); return {side: [[samples], ...]} in window order, and the
    wall time of the alternation."""
    out = {side: [] for side in workers}
    t0 = time.monotonic()
    for k in range(windows):
        for side in abba(k):
            out[side].append(workers[side].window(window_s, settle=settle))
    return out, time.monotonic() - t0


def start_pair(sides, window_s, windows, timeout_s=600, log=None, memory_mb=0,
               concurrent_import=True, spawn=None, concurrent_build=False, settle=None):
    """Start both workers, alternate, and return the record of the duet. With
    `concurrent_import` both processes start at once and import their framework side by side
    (nothing is timed then); each is built and warmed up only after the other's build is done
    (a (re)build competing for the CPU would bend its warm-up): side a, then side b. Without it,
    each worker starts, imports, builds and warms up before the other starts. `spawn` makes the
    processes (forkserver.ForkSpawner: children of each env's fork helper, which imported the
    framework already; its `prepare` starts the helpers both at once); with `concurrent_build`
    both sides are built and warmed up at the same time (config duets.build: together).
    `settle`: untimed calls that start each window (config duets.settle_calls; None: the
    worker's default, run_cell.SETTLE).

    sides: {"a": dict(python=, run_cell=, cell=, rule=, framework=, env=), "b": ...}"""
    workers, ready = {}, {}
    try:
        if hasattr(spawn, "prepare"):
            spawn.prepare([sides["a"], sides["b"]])
        for side in ("a", "b"):
            s = sides[side]
            workers[side] = Worker(s["python"], s["run_cell"], s["cell"], s["rule"],
                                   s["framework"], s["env"], timeout_s=timeout_s, log=log,
                                   memory_mb=memory_mb, wait_build=concurrent_import,
                                   spawn=spawn)
            if not concurrent_import:
                ready[side] = workers[side].expect("ready")
        if concurrent_import:
            loaded = {side: workers[side].expect("loaded", also=[workers[o] for o in "ab"
                                                                 if o != side])
                      for side in ("a", "b")}
            t0, built = time.monotonic(), {}
            if concurrent_build:
                for side in ("a", "b"):
                    workers[side].send("build")
                for side in ("a", "b"):
                    ready[side] = dict(workers[side].expect("ready"), **loaded[side])
                    built[side] = [0.0, time.monotonic() - t0]
            else:
                for side in ("a", "b"):
                    start = time.monotonic() - t0
                    ready[side] = dict(workers[side].build(), **loaded[side])
                    built[side] = [start, time.monotonic() - t0]
            for side in ("a", "b"):  # when each side's build was asked for and came back, in s
                ready[side]["build_span_s"] = [round(x, 4) for x in built[side]]
        windows_out, wall = alternate(workers, windows, window_s, settle)
        return {"ready": ready, "windows": windows_out, "alternation_s": wall}, workers
    except Exception:
        for w in workers.values():
            w.kill()
        raise


def start_together(sides, window_s, windows, first="a", timeout_s=600, log=None, memory_mb=0,
                   mix_block=0, extra=(), spawn=None):
    """Both sides in ONE fresh process (docs/design.md, "Pairs in one process"): the worker
    builds and warms up side `first`, then the other, and the two take turns window by window as
    a duet's sides do; the process's own state is then the same for both. The sides must share
    their env's Python, framework, environment and stopping rule. With `mix_block` the two are
    interleaved call by call instead (blocks of that many calls, run_cell.py's `mix`), for the
    windows' timed seconds in all. `extra` cells (of the same env) are built after both and
    share the process (and, with mix_block, the interleaving: each cell gets the pair's timed
    seconds per side): what a group of a configuration's cells in one process does to the pair.
    Returns what start_pair returns; the record says `together` and which side was built
    first."""
    if first not in ("a", "b"):
        raise ValueError("first must be 'a' or 'b', not %r" % (first,))
    other = "b" if first == "a" else "a"
    s, p = sides[first], sides[other]
    for key in ("python", "run_cell", "framework", "env", "rule"):
        if s[key] != p[key]:
            raise ValueError("a pair in one process needs both sides' %r to be the same "
                             "(side a: %r, side b: %r)" % (key, sides["a"][key], sides["b"][key]))
    worker = Worker(s["python"], s["run_cell"], s["cell"], s["rule"], s["framework"], s["env"],
                    timeout_s=timeout_s, log=log, memory_mb=memory_mb, partner=p["cell"],
                    extra=extra, spawn=spawn)
    workers = {first: worker, other: Partner(worker)}
    try:
        facts = worker.expect("ready")
        partner_facts = facts.pop("partner", None)
        if partner_facts is None:
            raise WorkerError("the worker did not build the partner cell")
        ready = {first: facts, other: partner_facts}
        if mix_block:  # interleaved call by call: the same timed seconds, one "window" a side
            t0 = time.monotonic()
            both = worker.mix((2 + len(extra)) * windows * window_s, mix_block)
            own, partner = both[0], both[1]
            windows_out = {first: [own], other: [partner]}
            wall = time.monotonic() - t0
        else:
            windows_out, wall = alternate(workers, windows, window_s)
        return ({"ready": ready, "windows": windows_out, "alternation_s": wall,
                 "together": True, "built_first": first}, workers)
    except Exception:
        worker.kill()
        raise
