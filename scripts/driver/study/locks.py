"""The machine's timing lock: timing jobs take it alone and env builds share it, so no build or
other timing job runs beside a timing job (builds may run beside each other), even when Snakemake
runs with many cores or two studies share a machine. It is a node-local file (flock), so on a
cluster each node has its own."""
import contextlib
import fcntl
import os
import tempfile


def default_lock_path():
    return os.path.join(tempfile.gettempdir(), "tfspeed-timing.lock")


@contextlib.contextmanager
def machine_lock(path=None, shared=False):
    """Hold the lock: alone (a timing job: a cell, a duet, the probe), or `shared` (an env build:
    builds load the machine, but only the timing of other jobs suffers from that)."""
    path = path or default_lock_path()
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
