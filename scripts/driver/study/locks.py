"""The machine's timing lock: timing jobs and env builds take it, so none of them overlap even when
Snakemake runs with many cores or two studies share a machine. It is a node-local file
(flock), so on a cluster each node has its own."""
import contextlib
import fcntl
import os
import tempfile


def default_lock_path():
    return os.path.join(tempfile.gettempdir(), "tfspeed-timing.lock")


@contextlib.contextmanager
def machine_lock(path=None):
    path = path or default_lock_path()
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
