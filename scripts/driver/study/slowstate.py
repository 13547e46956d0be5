"""What a process brings: the facts `make slow-state` records per worker process, and its summary.

Read from /proc of a live worker (Linux only) between its timed windows, never while one times:
its layout (where ASLR put the heap, the stack and the framework's shared objects), transparent huge
pages, the allocator it maps, its threads' CPUs, migrations and switches, and the machine's CPU
counters. `arm_prefix` gives the command prefix of each experimental arm (scripts/slow_state.py).
"""
import math
import os
import platform
import sys

import numpy as np

from driver.study.fingerprint import _read

# prctl(PR_SET_THP_DISABLE, 1): no transparent huge pages for this process and its children
_NOTHP = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(41, 1, 0, 0, 0); "
          "os.execvp(sys.argv[1], sys.argv[1:])")
ARMS = ("base", "noaslr", "nothp", "mallochp")
LIBS = ("tensorflow_framework", "_pywrap_tensorflow_internal", "libtensorflow_cc", "libpython",
        "libc.so", "libm.so", "_multiarray_umath", "libopenblas", "libdnnl", "libomp")
ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")


def arm_prefix(arm):
    """The command prefix that puts a worker in `arm`."""
    if arm == "base":
        return []
    if arm == "noaslr":
        return ["setarch", platform.machine(), "-R"]
    if arm == "nothp":
        return [sys.executable, "-c", _NOTHP]
    if arm == "mallochp":  # glibc's malloc asks for transparent huge pages (madvise)
        return ["env", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"]
    raise ValueError("slow_state: unknown arm %r (known: %s)" % (arm, ", ".join(ARMS)))


def layout_facts(pid):
    """Where things lie in the process `pid`, its huge pages, allocator and threads."""
    bases, allocator = {}, None
    for line in _read("/proc/%d/maps" % pid).splitlines():
        parts = line.split()
        start = int(parts[0].split("-")[0], 16)
        name = parts[5] if len(parts) > 5 else ""
        for key in ("[heap]", "[stack]") + LIBS:
            if key in name and key not in bases:
                bases[key] = start
        for alloc in ALLOCATORS:
            if alloc in name:
                allocator = alloc
    rollup = {}
    for line in _read("/proc/%d/smaps_rollup" % pid).splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].endswith(":") and words[1].isdigit():
            rollup[words[0][:-1]] = int(words[1])
    threads = None
    for line in _read("/proc/%d/status" % pid).splitlines():
        if line.startswith("Threads:"):
            threads = int(line.split()[1])
    return {"bases": bases, "anon_huge_kb": rollup.get("AnonHugePages"),
            "rss_kb": rollup.get("Rss"), "allocator": allocator or "glibc", "threads": threads}


def read_task_stats(pid):
    """Per thread of `pid`: CPU ticks, the CPU it last ran on, migrations, involuntary switches."""
    out = {}
    base = "/proc/%d/task" % pid
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        stat = _read("%s/%s/stat" % (base, tid))
        if not stat:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        sched = {}
        for line in _read("%s/%s/sched" % (base, tid)).splitlines():
            if ":" in line:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("se.nr_migrations", "nr_involuntary_switches", "nr_switches"):
                    sched[key] = float(value)
        # fields after the name: state is [0]; utime [11], stime [12], processor [36]
        out[tid] = {"ticks": int(fields[11]) + int(fields[12]), "cpu": int(fields[36]),
                    "migrations": sched.get("se.nr_migrations"),
                    "invol": sched.get("nr_involuntary_switches")}
    return out


def system_cpu():
    """/proc/stat's per-CPU counters (ticks): busy, idle and steal."""
    out = {}
    for line in _read("/proc/stat").splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            v = [int(x) for x in line.split()[1:]]
            out[line.split()[0]] = {"busy": v[0] + v[1] + v[2] + v[5] + v[6], "idle": v[3] + v[4],
                                    "steal": v[7] if len(v) > 7 else 0}
    return out


def covariates(rec):
    """One process's candidate explanations as numbers (name -> value)."""
    lay, out = rec["layout"], {}
    for key, start in lay["bases"].items():
        name = key.strip("[]").split(".")[0]
        for bits, label in ((12, "4k"), (16, "64k"), (21, "2m")):
            out["%s_mod_%s" % (name, label)] = (start % (1 << bits)) / float(1 << bits)
    out["anon_huge_kb"] = lay.get("anon_huge_kb") or 0
    out["threads"] = lay.get("threads") or 0
    migr = invol = steal = 0.0
    same_cpu = []
    for w in rec["windows"]:
        before, after = w["tasks"]
        busy = {}
        for tid, a in after.items():
            b = before.get(tid)
            if b is None:
                continue
            migr += (a["migrations"] or 0) - (b["migrations"] or 0)
            invol += (a["invol"] or 0) - (b["invol"] or 0)
            if a["ticks"] - b["ticks"] > 0:
                busy[tid] = a["cpu"]
        if len(busy) >= 2:
            same_cpu.append(float(len(set(busy.values())) == 1))
        cb, ca = w["cpu"]
        steal += sum(ca[c]["steal"] - cb[c]["steal"] for c in ca if c in cb)
    n = max(len(rec["windows"]), 1)
    out.update(migrations=migr / n, invol_switches=invol / n, steal_ticks=steal / n,
               busy_threads_same_cpu=float(np.mean(same_cpu)) if same_cpu else float("nan"),
               log_kernel=math.log(rec["kernel_median_s"]),
               first_call_s=rec["ready"].get("first_call_s", float("nan")),
               gap_s=rec.get("gap_s") if rec.get("gap_s") is not None else float("nan"))
    return out


def sd_ci(x, level=0.95):
    """The sd of x with its chi-square CI."""
    x = np.asarray(x, float)
    n = len(x)
    from scipy import stats as sps

    s = float(np.std(x, ddof=1))
    a = (1 - level) / 2
    return s, s * math.sqrt((n - 1) / sps.chi2.ppf(1 - a, n - 1)), s * math.sqrt(
        (n - 1) / sps.chi2.ppf(a, n - 1))


def slow_flags(log_medians, factor=1.15):
    """A process is slow when its median lies more than `factor` above its arm's first quartile."""
    x = np.asarray(log_medians, float)
    return x > np.percentile(x, 25) + math.log(factor)


def summarize_arms(recs, sps):
    """The text `make slow-state` prints: per arm the spread, the slow share, and per covariate
    its rank correlation with the log median (base arm, or all when there is one arm)."""
    lines = []
    by_arm = {}
    for r in recs:
        by_arm.setdefault(r["arm"], []).append(r)
    base = [math.log(r["median_s"]) for r in by_arm.get("base", [])]
    lines.append("%-9s %3s %9s %22s %12s %16s %10s" % ("arm", "n", "median", "sd log (95% CI)",
                                                       "F vs base", "slow share (CI)",
                                                       "kernel sd"))
    for arm, rs in sorted(by_arm.items()):
        logs = [math.log(r["median_s"]) for r in rs]
        if len(logs) < 3:
            continue
        s, lo, hi = sd_ci(logs)
        f = ""
        if arm != "base" and len(base) >= 3:
            ratio = np.var(logs, ddof=1) / np.var(base, ddof=1)
            p = 2 * min(sps.f.cdf(ratio, len(logs) - 1, len(base) - 1),
                        sps.f.sf(ratio, len(logs) - 1, len(base) - 1))
            f = "%.2f p=%.2g" % (ratio, p)
        slow = slow_flags(logs)
        ci = sps.binomtest(int(slow.sum()), len(slow)).proportion_ci()
        ksd = np.std([math.log(r["kernel_median_s"]) for r in rs], ddof=1)
        lines.append("%-9s %3d %7.3fms %8.3f (%.3f-%.3f) %12s %4d/%-3d (%.2f-%.2f) %10.3f" % (
            arm, len(rs), 1e3 * math.exp(np.median(logs)), s, lo, hi, f, slow.sum(), len(slow),
            ci.low, ci.high, ksd))
    pool = by_arm.get("base") or recs
    if len(pool) >= 6:
        logs = np.array([math.log(r["median_s"]) for r in pool])
        cov = [covariates(r) for r in pool]
        lines.append("rank correlation with the log median (%d processes, arm %s):" % (
            len(pool), "base" if by_arm.get("base") else "all"))
        rows = []
        for key in sorted(set().union(*cov)):
            v = np.array([c.get(key, float("nan")) for c in cov], float)
            ok = np.isfinite(v)
            if ok.sum() < 6 or np.ptp(v[ok]) == 0:
                continue
            rho, p = sps.spearmanr(v[ok], logs[ok])
            rows.append((p, key, rho, int(ok.sum())))
        for p, key, rho, n in sorted(rows)[:15]:
            lines.append("  %-36s rho %+.2f  p %.3g  (n %d)" % (key, rho, p, n))
    return "\n".join(lines)
