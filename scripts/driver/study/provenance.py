"""Machine and environment facts that belong to every result. Standard library only; every read is
best-effort (a fact that cannot be read is None, never an error)."""
import os
import platform
import re
import shutil
import socket
import subprocess

from driver.study import fingerprint

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TF_ENABLE_ONEDNN_OPTS",
               "CUDA_VISIBLE_DEVICES", "KERAS_BACKEND", "XLA_FLAGS")
GPU_QUERY = "name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,memory.total,power.draw"


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def cpu_info():
    text = _read("/proc/cpuinfo") or ""
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    mhz = re.findall(r"^cpu MHz\s*:\s*([\d.]+)$", text, re.M)
    wanted = ("avx", "avx2", "avx512f", "fma", "sse4_2", "amx_tile")
    return {
        "cpu_model": model.group(1).strip() if model else platform.processor() or None,
        "cpu_flags": sorted(set(flags.group(1).split()) & set(wanted)) if flags else None,
        "cpu_count": os.cpu_count(),
        "cpu_mhz": [float(m) for m in mhz] or None,
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cur_freq_khz": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"),
    }


def gpu_info():
    """GPU name, driver, clocks and temperature via nvidia-smi where present, else None."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + GPU_QUERY, "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    keys = GPU_QUERY.split(",")
    return [dict(zip(keys, (v.strip() for v in line.split(",")))) for line in out.splitlines()
            if line.strip()] or None


def code_facts(repo=None):
    """The workflow code that timed a result: {"commit": the checkout's HEAD, "dirty": whether
    tracked files differ from it}, each None when git or the repository is not there. What
    `make publish` records as the run's commit (scripts/publish.py)."""
    repo = repo or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = {"commit": None, "dirty": None}
    try:
        head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            out["commit"] = head.stdout.strip()
            status = subprocess.run(["git", "-C", repo, "status", "--porcelain",
                                     "--untracked-files=no"], capture_output=True, text=True,
                                    timeout=10)
            out["dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def load_average():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def machine_facts(env=None):
    """Facts of this machine; `thread_env` from `env`, the environment the cell runs with (the
    supervisor's own holds the orchestrator's OMP_NUM_THREADS=1 & co., which the cell never sees)."""
    mem = re.search(r"MemTotal:\s*(\d+)", _read("/proc/meminfo") or "")
    env = os.environ if env is None else env
    facts = {"hostname": socket.gethostname(), "platform": platform.platform(),
             "mem_total_gb": round(int(mem.group(1)) / 2**20, 1) if mem else None,
             "gpus": gpu_info(), "thread_env": {k: env.get(k) for k in THREAD_VARS},
             "fingerprint": fingerprint.read_fingerprint()}
    facts.update(cpu_info())
    return facts


def machine_key(facts=None):
    """The key of `machine: auto`: a readable stem plus the fingerprint's short hash
    (driver.study.fingerprint); facts without a fingerprint give the stem alone (the old key)."""
    facts = facts or {"fingerprint": fingerprint.read_fingerprint()}
    if facts.get("fingerprint"):
        return fingerprint.machine_key(facts["fingerprint"])
    return fingerprint.stem(facts.get("cpu_model") or platform.machine(), facts.get("cpu_count"),
                            facts.get("gpus"))


def boot_id():
    """This boot's id (Linux), or "" where there is none: a new one after a reboot or on another VM."""
    return (_read("/proc/sys/kernel/random/boot_id") or "").strip()
