"""Does a GPU build see the GPU? After an env is built, on a machine where nvidia-smi lists a GPU,
the framework is asked in the env's own Python how many GPUs it sees; none fails the build with the
reason and what to do (a pip-only build of TF before 2.14 finds no CUDA: tensorflow[and-cuda] exists
from 2.14; older TF needs conda's cudatoolkit/cudnn or a system CUDA). Where no GPU is listed the
check is skipped and says so.
"""
import shutil
import subprocess

from tfspeed import backends, frameworks


def machine_gpus(run=subprocess.run):
    """The GPUs `nvidia-smi -L` lists ('GPU 0: NVIDIA H100 (UUID: ...)'); [] without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = run([exe, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines()
            if line.startswith("GPU ")] if out.returncode == 0 else []


def framework_gpus(python, framework, run=subprocess.run):
    """(count, detail): how many GPUs the env's framework sees, asked in the env's own Python with
    its catalogue row's `gpu_query` (tfspeed/frameworks.py); count None when the query failed."""
    row = frameworks.get(framework)
    query = row.gpu_query if row is not None else None
    if not query:
        return None, "no GPU query for framework %r" % framework
    try:
        out = run([python, "-c", query], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    last = out.stdout.strip().splitlines()[-1:] or [""]
    if out.returncode != 0 or not last[0].isdigit():
        return None, (out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]
    return int(last[0]), ""


def gpu_hint(manifest):
    """Why a GPU build may not see the GPU: its framework's own word (the `gpu_hint(version)` hook
    of its backend, tfspeed/backends/), else the generic one."""
    hint = backends.hook(manifest.get("framework"), "gpu_hint")
    if hint is not None:
        return hint(manifest.get("framework_version") or "0")
    return "check that the framework is its CUDA build and that the driver supports its CUDA"


def gpu_check(manifest, listed=machine_gpus, seen=framework_gpus):
    """(ok, what): a GPU build on a machine whose nvidia-smi lists a GPU must see one; when it does
    not, ok is False and `what` is the reason the build fails with (a GPU study would otherwise
    time CPU cells and skip every gpu cell). `listed` and `seen` are the two queries (nvidia-smi
    and the framework's own), arguments so that a test can stand in for a GPU."""
    if manifest.get("build") != "gpu":
        return True, "not a GPU build"
    gpus = listed()
    if not gpus:
        return True, "not checked: nvidia-smi lists no GPU on this machine"
    count, detail = seen(manifest["python_executable"], manifest["framework"])
    if not count:
        return False, ("%s is a GPU build and this machine has a GPU (%s), but %s %s sees none%s; %s"
                       % (manifest["name"], gpus[0], manifest["framework"],
                          manifest["framework_version"],
                          " (its GPU query failed: %s)" % detail if count is None else "",
                          gpu_hint(manifest)))
    return True, "%s sees %d GPU(s); nvidia-smi lists %d" % (manifest["framework"], count, len(gpus))
