"""A single-node SLURM cluster on localhost, for the cluster test (tests/test_slurm.py).

Starts munged, slurmctld and slurmd (Debian's `munge` and `slurm-wlm`) on loopback, all in the
foreground as children of this process, and stops them by PID. Everything they write lives in one
state folder (default /tmp/tfspeed-slurm: logs, pid files, state, the munge key and socket) except
the config itself, which goes to SLURM's default path /etc/slurm/slurm.conf: the job step that the
Snakemake SLURM plugin starts inside each job (`srun`) runs with every SLURM_* variable removed,
SLURM_CONF included, so only the default path reaches it. A config there that this module did not
write is moved aside and put back on stop.

Idempotent: a cluster left running by an earlier run (found by the TFSPEED_SLURM_CLUSTER variable
in its daemons' environment, or by their pid files) is stopped before a new one starts. A SLURM not
started here (a real cluster's daemons) is never touched: start() refuses to run beside it.

    python tests/slurm_cluster.py start|stop|status    # by hand; `start` leaves it running
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scontrol")
DAEMONS = ("munged", "slurmctld", "slurmscriptd", "slurmd", "slurmstepd")
DEFAULT_STATE = "/tmp/tfspeed-slurm"
DEFAULT_CONF = "/etc/slurm/slurm.conf"
MARKER = "# written by tfspeed tests/slurm_cluster.py"
ENV_TAG = "TFSPEED_SLURM_CLUSTER"


def missing_binaries():
    """The SLURM and munge programs this needs that are not on PATH (or in /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def _which(name):
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return shutil.which(name, path=path)


def _proc_comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _proc_tag(pid):
    """The TFSPEED_SLURM_CLUSTER value in a process's environment, or None."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            env = handle.read().split(b"\0")
    except OSError:
        return None
    prefix = ENV_TAG.encode() + b"="
    for item in env:
        if item.startswith(prefix):
            return item[len(prefix):].decode("utf-8", "replace")
    return None


def _alive(pid):
    """Running (a zombie, whose parent has not reaped it yet, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _daemon_pids():
    """{pid: comm} of every live munged/slurm daemon process on this machine."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            comm = _proc_comm(int(name))
            if comm in DAEMONS and _alive(int(name)):
                out[int(name)] = comm
    return out


def _stop_pid(pid, timeout=15.0):
    """SIGTERM, then SIGKILL after `timeout`; reaps it when it is our child."""
    if not _alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _descendants(pid):
    """PIDs of every process under `pid`, deepest first."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return out[::-1]


def node_facts():
    """`slurmd -C` without NodeName and UpTime: CPUs, sockets, cores, threads, RealMemory."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, check=True)
    line = next(li for li in out.stdout.splitlines() if li.startswith("NodeName="))
    return " ".join(f for f in line.split() if not f.startswith("NodeName="))


class SlurmCluster:
    """munged + slurmctld + slurmd on 127.0.0.1, one node (this machine), one partition `debug`."""

    def __init__(self, state_dir=DEFAULT_STATE, conf_path=DEFAULT_CONF, partition="debug",
                 ctld_port=16817, slurmd_port=16818, min_job_age=600):
        self.state = os.path.abspath(state_dir)
        self.conf_path = conf_path
        self.backup_path = conf_path + ".tfspeed-backup"
        self.partition = partition
        self.ctld_port = ctld_port
        self.slurmd_port = slurmd_port
        # Without an accounting database, squeue is the only source of a finished job's state, and
        # only for MinJobAge seconds; the plugin also goes back to sacct below 3x its first delay.
        self.min_job_age = min_job_age
        self.node = socket.gethostname().split(".")[0]
        self.procs = {}

    # --- paths -------------------------------------------------------------------------------
    def _p(self, name):
        return os.path.join(self.state, name)

    @property
    def socket_path(self):
        return self._p("munge.socket")

    def env(self, base=None):
        """An environment for SLURM clients (sbatch, squeue, snakemake): no inherited SLURM_* of
        an outer job, and SLURM_CONF naming this cluster's config."""
        env = dict(os.environ if base is None else base)
        for key in list(env):
            if key.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")):
                del env[key]
        env["SLURM_CONF"] = self.conf_path
        return env

    # --- config ------------------------------------------------------------------------------
    def config_text(self):
        s = self.state
        return "\n".join([
            MARKER + " (state in %s); removed by its stop()" % s,
            "ClusterName=tfspeed",
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmctldPort=%d" % self.ctld_port,
            "SlurmdPort=%d" % self.slurmd_port,
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.socket_path,
            "MpiDefault=none",
            # no cgroups in a container: plain process tracking, no binding
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            "StateSaveLocation=%s/ctld" % s,
            "SlurmdSpoolDir=%s/slurmd" % s,
            "SlurmctldPidFile=%s/slurmctld.pid" % s,
            "SlurmdPidFile=%s/slurmd.pid" % s,
            "SlurmctldLogFile=%s/slurmctld.log" % s,
            "SlurmdLogFile=%s/slurmd.log" % s,
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # no accounting database: finished jobs stay visible to squeue for MinJobAge seconds
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=%d" % self.min_job_age,
            "InactiveLimit=0",
            "KillWait=5",
            "SlurmdTimeout=300",
            "Waittime=0",
            "NodeName=%s NodeAddr=127.0.0.1 %s State=UNKNOWN" % (self.node, node_facts()),
            "PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
            % self.partition,
            "",
        ])

    def _write_config(self):
        os.makedirs(os.path.dirname(self.conf_path), exist_ok=True)
        if os.path.exists(self.conf_path) and not self._conf_is_ours():
            if os.path.exists(self.backup_path):
                raise RuntimeError("%s exists and so does %s; move one of them away"
                                   % (self.conf_path, self.backup_path))
            os.rename(self.conf_path, self.backup_path)
        tmp = self.conf_path + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(self.config_text())
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.conf_path)

    def _conf_is_ours(self):
        try:
            with open(self.conf_path) as handle:
                return handle.readline().startswith(MARKER)
        except OSError:
            return False

    def _restore_config(self):
        if self._conf_is_ours():
            os.remove(self.conf_path)
        if os.path.exists(self.backup_path) and not os.path.exists(self.conf_path):
            os.rename(self.backup_path, self.conf_path)

    # --- processes ---------------------------------------------------------------------------
    def _ours(self):
        """{pid: comm} of daemons of this cluster still running (from any earlier run too): found
        by the variable set when they were started, by pid file, or (slurmstepd, which slurmd
        starts with a clean environment) by its working folder or open files in the state folder."""
        out = {}
        for pid, comm in _daemon_pids().items():
            if _proc_tag(pid) == self.state or self._uses_state(pid):
                out[pid] = comm
        for name in ("munged", "slurmctld", "slurmd"):
            try:
                with open(self._p(name + ".fixture.pid")) as handle:
                    pid = int(handle.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if _proc_comm(pid) == name and _alive(pid) and _proc_tag(pid) == self.state:
                out[pid] = name
        return out

    def _uses_state(self, pid):
        prefix = self.state + os.sep
        try:
            links = [os.readlink("/proc/%d/cwd" % pid)]
            fd_dir = "/proc/%d/fd" % pid
            links += [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        except OSError:
            return False
        return any(link == self.state or link.startswith(prefix) for link in links)

    def _foreign(self):
        """Daemons of some other SLURM on this machine (a real cluster's, or another test's)."""
        ours = self._ours()
        return {pid: comm for pid, comm in _daemon_pids().items()
                if comm not in ("slurmstepd", "slurmscriptd") and pid not in ours}

    def _spawn(self, name, argv):
        env = dict(os.environ)
        env[ENV_TAG] = self.state
        env.pop("SLURM_CONF", None)
        log = open(self._p(name + ".out"), "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                cwd=self.state, start_new_session=True)
        log.close()
        self.procs[name] = proc
        with open(self._p(name + ".fixture.pid"), "w") as handle:
            handle.write("%d\n" % proc.pid)
        return proc

    def running(self):
        return bool(self._ours())

    def start(self, timeout=60):
        """Stop what an earlier run left, then start munged, slurmctld and slurmd and wait until
        the node is idle. Raises RuntimeError (with the daemons' logs) when it does not come up."""
        missing = missing_binaries()
        if missing:
            raise RuntimeError("not installed: %s (apt-get install slurm-wlm munge)"
                               % ", ".join(missing))
        if os.geteuid() != 0:
            raise RuntimeError("the local SLURM cluster runs its daemons as root; run as root")
        self.stop(quiet=True)
        foreign = self._foreign()
        if foreign:
            raise RuntimeError(
                "a SLURM or munge not started by tests/slurm_cluster.py is running here (%s); "
                "stop it first" % ", ".join("%s[%d]" % (c, p) for p, c in sorted(foreign.items())))
        for sub in ("ctld", "slurmd"):
            shutil.rmtree(self._p(sub), ignore_errors=True)
        for sub in ("", "ctld", "slurmd"):
            os.makedirs(self._p(sub), exist_ok=True)
        os.chmod(self.state, 0o755)  # munged wants the socket's folder to be reachable by all
        for name in os.listdir(self.state):
            if name.endswith((".log", ".out", ".pid")):
                os.remove(self._p(name))
        key = self._p("munge.key")
        if not os.path.exists(key):
            with open(key, "wb") as handle:
                handle.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self._write_config()
        try:
            self._spawn("munged", [_which("munged"), "--foreground", "--force",
                                   "--socket=" + self.socket_path, "--key-file=" + key,
                                   "--log-file=" + self._p("munged.log"),
                                   "--pid-file=" + self._p("munged.pid"),
                                   "--seed-file=" + self._p("munged.seed")])
            self._wait(lambda: os.path.exists(self.socket_path), timeout, "munged's socket")
            self._check_munge()
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-c", "-f", self.conf_path])
            self._wait(self._ctld_up, timeout, "slurmctld to answer")
            self._spawn("slurmd", [_which("slurmd"), "-D", "-f", self.conf_path, "-N", self.node])
            self._wait(self._node_idle, timeout, "node %s to be idle" % self.node)
        except Exception as exc:
            try:
                state = self._run("sinfo", "-N", "-l", timeout=5).stdout
            except (subprocess.TimeoutExpired, OSError):
                state = ""
            logs = self.logs()
            self.stop(quiet=True)
            raise RuntimeError("the local SLURM cluster did not start: %s\n%s%s"
                               % (exc, state, logs)) from None
        return self

    def _wait(self, check, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError("%s exited with %s while waiting for %s"
                                       % (name, proc.returncode, what))
            if check():
                return
            time.sleep(0.3)
        raise RuntimeError("timed out after %d s waiting for %s" % (timeout, what))

    def _run(self, *argv, timeout=20):
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env(),
                              timeout=timeout)

    def _check_munge(self):
        cred = subprocess.run([_which("munge") or "munge", "-n", "-S", self.socket_path],
                              capture_output=True, check=True, timeout=10).stdout
        subprocess.run([_which("unmunge") or "unmunge", "-S", self.socket_path], input=cred,
                       capture_output=True, check=True, timeout=10)

    def _ctld_up(self):
        try:
            return self._run("scontrol", "ping").returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _node_idle(self):
        try:
            out = self._run("sinfo", "-h", "-N", "-o", "%N %T", "-n", self.node).stdout.split()
        except subprocess.TimeoutExpired:
            return False
        return len(out) >= 2 and out[1] == "idle"

    def stop(self, quiet=False):
        """Cancel this cluster's jobs, stop its daemons by PID, put the config back."""
        ours = self._ours()
        if ours and any(c == "slurmctld" for c in ours.values()):
            try:
                self._run("scancel", "--partition=" + self.partition, timeout=10)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and "slurmstepd" in self._ours().values():
                    time.sleep(0.2)
            except (subprocess.TimeoutExpired, OSError):
                pass
        # Job steps first (each job process under one before the slurmstepd itself: a step whose
        # slurmd was killed is never cleaned up otherwise), then slurmd, slurmctld, munged.
        order = {"slurmstepd": 0, "slurmd": 1, "slurmctld": 2, "slurmscriptd": 3, "munged": 4}
        for _round in range(2):
            for pid, comm in sorted(self._ours().items(), key=lambda item: order[item[1]]):
                if comm == "slurmstepd":
                    for child in _descendants(pid):
                        _stop_pid(child, timeout=2)
                    _stop_pid(pid, timeout=2)
                else:
                    _stop_pid(pid)
        for proc in self.procs.values():
            _stop_pid(proc.pid)
            proc.poll()
        self.procs = {}
        left = self._ours()
        if left and not quiet:
            print("could not stop: %s" % left, file=sys.stderr)
        self._restore_config()

    # --- diagnostics -------------------------------------------------------------------------
    def logs(self, tail=60):
        """The last lines of each daemon's log file and of its stdout/stderr (where a daemon
        writes what keeps it from starting)."""
        out = []
        for name in ("munged.log", "munged.out", "slurmctld.log", "slurmctld.out", "slurmd.log",
                     "slurmd.out"):
            path = self._p(name)
            if os.path.exists(path):
                with open(path, errors="replace") as handle:
                    lines = handle.read().splitlines()[-(tail if name.endswith(".log") else 15):]
                out.append("----- %s (last %d lines)\n%s" % (path, len(lines), "\n".join(lines)))
        return "\n".join(out) or "(no daemon logs under %s)" % self.state

    def jobs(self):
        """{job id: (state, job name, CPUs)} of every job slurmctld still knows (MinJobAge)."""
        out = self._run("squeue", "--states=all", "-h", "-o", "%i|%T|%C|%j").stdout
        rows = (line.split("|", 3) for line in out.splitlines() if line.strip())
        return {r[0]: (r[1], r[3], int(r[2])) for r in rows if len(r) == 4}

    @property
    def cpus(self):
        """The node's CPU count as slurmd sees it (what it advertises)."""
        return int(re.search(r"\bCPUs=(\d+)", node_facts()).group(1))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv):
    cluster = SlurmCluster()
    if argv[1:] == ["start"]:
        cluster.start()
        print("SLURM running: node %s, partition %s, config %s, state %s"
              % (cluster.node, cluster.partition, cluster.conf_path, cluster.state))
    elif argv[1:] == ["stop"]:
        cluster.stop()
    elif argv[1:] == ["status"]:
        ours = cluster._ours()
        print("running: %s" % (", ".join("%s[%d]" % (c, p) for p, c in sorted(ours.items()))
                               or "nothing"))
        if ours:
            print(cluster._run("sinfo").stdout)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
