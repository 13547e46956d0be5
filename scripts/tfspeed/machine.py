"""What the rest of the machine and this process do while a cell times. Standard library only;
where /proc does not exist (macOS, Windows) every figure is None, never an error.

Foreign CPU: the machine's busy CPU time (/proc/stat: user, nice, system, irq, softirq; guest time
is already inside user) over the timed window, minus the CPU time of this cell's own process group
(every thread of every process in it, from /proc/<pid>/stat). What is left ran beside the cell and
competed with it: the orchestrator, a build, another tenant's process in this VM. Steal time (the
hypervisor running other VMs) is kept apart: it slows the cell too, but nothing here can stop it.

Resolution: both figures are counted in clock ticks (10 ms at 100 Hz). The machine's busy time is
tick-sampled (each tick charges a whole tick to whatever the CPU runs then), so for a CPU busy a
fraction p of a window of N ticks the count scatters like Binomial(N, p): over 0.5 s on 2 CPUs a
quiet machine reads about +-0.1 core of "foreign" CPU that is only sampling. Each counter read at
both window edges also truncates (variance 1/6 tick^2 per counter). `foreign_resolution_share` is
the one-sided 99 % bound of that error, in cores; a cell is flagged only when its foreign CPU lies
beyond the threshold by more than that (`foreign_flag`).

Threads: what each library actually uses, read from the library, not from the environment.
"""
import ctypes
import math
import os

# Lines the cell prints around its timed window, so the supervisor can meter the orchestrator's CPU
# over exactly that window.
WINDOW_START = "[tfspeed] timed window: start"
WINDOW_END = "[tfspeed] timed window: end"

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# One-sided 99 % normal quantile: a quiet machine's cell is flagged about once in 100 processes.
RESOLUTION_Z = 2.326
# Fields summed from /proc/stat's cpu line (user, nice, system, irq, softirq), each truncated.
_MACHINE_COUNTERS = 5


def foreign_resolution_share(wall_s, busy_cores, ncpu, own_processes, hz=_HZ, z=RESOLUTION_Z):
    """The smallest foreign CPU (in cores) that the two tick counts can tell from zero over a window
    of `wall_s` seconds in which the machine's `ncpu` CPUs were busy `busy_cores` on average and the
    cell's group had `own_processes` processes (two truncated counters each: utime, stime).

    Sampling: sum over CPUs of N p_c (1 - p_c) ticks^2 is at most ncpu N p (1 - p) at the mean p
    (concavity), so the bound holds however the load is spread over the CPUs."""
    if not wall_s or wall_s <= 0 or not ncpu:
        return None
    ticks = wall_s * hz
    p = min(1.0, max(0.0, busy_cores / float(ncpu)))
    variance = ncpu * ticks * p * (1.0 - p) + (_MACHINE_COUNTERS + 2 * own_processes) / 6.0
    return z * math.sqrt(variance) / hz / wall_s


def combine_windows(windows):
    """One meter over several timed windows (a duet's, each taken by one worker while the other
    waits): foreign and own CPU summed over them, the share over their summed wall time, and the
    resolution of the sum (the windows' sampling errors are independent: their variances add).
    None where no window could be measured."""
    got = [w for w in windows if w and w.get("foreign_cpu_share") is not None]
    if not got:
        return None
    walls = [w["window_end_unix"] - w["window_start_unix"] for w in got]
    foreign = sum(w["foreign_cpu_s"] for w in got)
    variance = sum(((w.get("foreign_cpu_resolution_share") or 0.0) * t / RESOLUTION_Z) ** 2
                   for w, t in zip(got, walls))
    wall = max(sum(walls), 1e-9)
    return {"windows": len(got), "window_s": wall, "foreign_cpu_s": foreign,
            "foreign_cpu_share": foreign / wall,
            "own_cpu_s": sum(w.get("own_cpu_s") or 0.0 for w in got),
            "steal_cpu_s": sum(w.get("steal_cpu_s") or 0.0 for w in got),
            "foreign_cpu_resolution_share": RESOLUTION_Z * math.sqrt(variance) / wall}


def foreign_flag(cpu, max_share):
    """True when the window's foreign CPU exceeds `max_share` by more than its resolution; None
    where it could not be measured."""
    share = cpu.get("foreign_cpu_share")
    if share is None:
        return None
    return bool(share > max_share + (cpu.get("foreign_cpu_resolution_share") or 0.0))


def _proc_stat_cpu():
    """(busy_s, steal_s) of the whole machine since boot, or None."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
    except (IOError, OSError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq) / float(_HZ), steal / float(_HZ)


def _all_stats():
    """[(pid, command, fields after the command name)] of every process from /proc/<pid>/stat;
    None where /proc cannot be listed. Processes that end meanwhile are skipped."""
    try:
        pids = os.listdir("/proc")
    except OSError:
        return None
    out = []
    for pid in pids:
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as handle:
                text = handle.read()
            out.append((int(pid), text[text.index("(") + 1:text.rindex(")")],
                        text.rsplit(")", 1)[1].split()))
        except (IOError, OSError, ValueError):
            continue
    return out


def _group_stat_fields(pgid):
    """The /proc/<pid>/stat fields (those after the command name) of every process in process
    group `pgid`; None where /proc cannot be listed."""
    stats = _all_stats()
    if stats is None:
        return None
    out = []
    for _, _, fields in stats:
        try:
            if int(fields[2]) == pgid:  # field 5: process group
                out.append(fields)
        except (IndexError, ValueError):
            continue
    return out


def _group_cpu_s(pgid):
    """(CPU seconds (user + system, all threads), processes) of process group `pgid`."""
    group = _group_stat_fields(pgid)
    if group is None:
        return None
    total = sum(int(f[11]) + int(f[12]) for f in group)  # fields 14, 15: utime, stime
    return total / float(_HZ), len(group)


def process_cpu():
    """{pid: (process group, command, CPU seconds so far, start time in ticks)} of every
    process, from /proc/<pid>/stat; None where /proc cannot be listed. The start time tells a
    reused pid from the process that had it (a kernel worker's command changes with the work it
    serves, so the command cannot)."""
    stats = _all_stats()
    if stats is None:
        return None
    out = {}
    for pid, command, fields in stats:
        try:
            out[pid] = (int(fields[2]), command,
                        (int(fields[11]) + int(fields[12])) / float(_HZ),  # utime, stime
                        int(fields[19]))  # field 22: starttime
        except (IndexError, ValueError):
            continue
    return out


def top_consumers(before, after, exclude_groups=(), n=3):
    """The `n` processes that used the most CPU between two process_cpu() snapshots, outside
    the process groups `exclude_groups` (a duet's workers): [{"pid", "command", "cpu_s"}], most
    first, those that used none left out. A process that started and ended between the two
    snapshots is not seen. None without /proc."""
    if before is None or after is None:
        return None
    used = []
    for pid, (group, command, cpu, started) in after.items():
        if group in exclude_groups:
            continue
        start = before.get(pid)
        spent = cpu - (start[2] if start and start[3] == started else 0.0)
        if spent > 0:
            used.append({"pid": pid, "command": command, "cpu_s": round(spent, 2)})
    return sorted(used, key=lambda u: -u["cpu_s"])[:n]


def group_rss_mb(pgid):
    """Resident memory of every process in process group `pgid` (a cell's or a duet worker's:
    each runs in its own session), in MB; 0 where /proc does not exist."""
    group = _group_stat_fields(pgid) or []
    pages = sum(int(f[21]) for f in group)  # field 24: rss pages
    return pages * os.sysconf("SC_PAGE_SIZE") / 2.0 ** 20 if pages else 0.0


class CpuWindow(object):
    """Brackets a timed window: `start()` before the first timed call, `stop()` after the last."""

    def __init__(self):
        self.pgid = os.getpgrp() if hasattr(os, "getpgrp") else None
        self._begin = None

    def _snapshot(self):
        machine = _proc_stat_cpu()
        own = _group_cpu_s(self.pgid) if machine is not None else None
        import time
        return machine, own, time.time()

    def start(self):
        self._begin = self._snapshot()

    def stop(self):
        (m0, own0, t0), (m1, own1, t1) = self._begin, self._snapshot()
        wall = max(t1 - t0, 1e-9)
        out = {"window_start_unix": t0, "window_end_unix": t1, "foreign_cpu_s": None,
               "foreign_cpu_share": None, "own_cpu_s": None, "steal_cpu_s": None,
               "foreign_cpu_resolution_share": None, "clock_ticks_per_s": _HZ}
        if m0 is None or m1 is None or own0 is None or own1 is None:
            return out
        own = own1[0] - own0[0]
        busy = m1[0] - m0[0]
        # Tick counters are coarse (10 ms): a negative remainder is sampling, not negative load.
        foreign = max(0.0, busy - own)
        resolution = foreign_resolution_share(wall, busy / wall, os.cpu_count() or 1,
                                              max(own0[1], own1[1]))
        out.update(own_cpu_s=own, foreign_cpu_s=foreign, foreign_cpu_share=foreign / wall,
                   steal_cpu_s=m1[1] - m0[1], own_cpu_share=own / wall,
                   foreign_cpu_resolution_share=resolution)
        return out


def os_threads():
    """Threads of this process right now (/proc/self/status), or None."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (IOError, OSError, ValueError):
        return None
    return None


# (file-name token, getters to try): NumPy >= 2 wheels carry scipy-openblas with a prefixed,
# 64-bit-integer API; older wheels carry plain OpenBLAS.
_BLAS_GETTERS = (
    ("openblas", ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                  "openblas_get_num_threads64_", "openblas_get_num_threads")),
    ("mkl", ("MKL_Get_Max_Threads",)),
    ("blis", ("bli_thread_get_num_threads",)),
)


def blas_threads():
    """{library file: threads} for every BLAS loaded into this process (NumPy's, torch's...),
    asked through the library's own getter, as threadpoolctl does; {} where none is loaded."""
    try:
        with open("/proc/self/maps") as handle:
            paths = sorted({line.split()[-1] for line in handle if ".so" in line})
    except (IOError, OSError):
        return {}
    out = {}
    for path in paths:
        name = os.path.basename(path).lower()
        for token, getters in _BLAS_GETTERS:
            if token not in name:
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                break
            for getter in getters:
                fn = getattr(lib, getter, None)
                if fn is not None:
                    out[os.path.basename(path)] = int(fn())
                    break
            break
    return out


# Set by the orchestrator for its own jobs (Snakemake's shell(): one thread per job unless the rule
# says); the supervisor removes them so a cell gets the library defaults a user gets.
ORCHESTRATOR_THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                            "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
PINNED_VAR = "TFSPEED_THREADS"


def pinned_threads():
    """The thread count a study pins on purpose (config `threads`), or None for library defaults."""
    value = os.environ.get(PINNED_VAR, "")
    return int(value) if value.isdigit() and int(value) > 0 else None
