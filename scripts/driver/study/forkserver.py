"""A duet's workers forked from per-env fork helpers, in place of fresh processes.

Why (docs/design.md, "A duet's workers"): most of a fresh worker's start is its framework's
import, which times nothing. A fork helper (scripts/run_cell.py --helper, in the env's Python,
with the environment duet.cell_env gives) imports the framework once; each duet's worker is then
a child forked from it, an ordinary `--serve` worker that speaks the protocol of duet.Worker over
a Unix socket. Children forked from a helper that imported the framework draw their own process
state (`make measure-fork`; its dated note is cited in docs/design.md), so duets stay independent
replicates; each duet file says per side whether its worker was forked, by which helper, and how
many children that helper had forked before.

One helper per env build and environment (the key: the env's Python, run_cell.py, the framework and
the environment but its temp folder), per machine, and per generation where the side's environment
names one (GENERATION, config duets.renew_helpers: a replicate round and mode, so that the
reference env's helper, whose state every row of a round shares, is a new process every round; the
first side of a round asks the earlier rounds' helpers of that key to exit). Its facts file and log
lie in the machine's helpers folder (helpers_dir), its socket is named after both. A helper exits
when idle (IDLE_S), when its owner (the Snakemake process) is gone, or when asked (the study's end:
rules/common.smk stop_fork_helpers). A cell's process is a child of the same helpers (config
cell_workers: fork, supervise_cell.py); with fresh cells supervise_cell.py asks every helper of the
machine to exit before a cell times (stop_helpers), so that none holds memory then. A spawner
about to start a helper first asks the least recently used ones to exit while memory is short
(ForkSpawner.make_room). If a helper cannot start or fork, the worker is a fresh process and the
file says why (`fallback`).
"""
import glob
import hashlib
import json
import os
import socket
import subprocess
import sys
import time

from driver.study import duet
from tfspeed.forkhelper import read_line

VOLATILE = ("TMPDIR", "TEMP", "TMP")  # a duet's own scratch folder: set per child, not per helper
GENERATION = "TFSPEED_HELPER_GENERATION"  # a helper per generation (duets.renew_helpers)
# A helper outlives the gaps between its env's duets: an env's rows come once a replicate round,
# and a round of the default's first look takes minutes, so with a two-minute idle limit most
# envs' helpers were started again every round (each start an import inside a duet's wall).
IDLE_S = 1200.0
# Helpers sleep without CPU but hold memory: before a new one starts, the helpers used longest
# ago exit while the machine's available memory is under this share of its total (at least
# RESERVE_MIN_MB), so that a machine with little memory keeps fewer of them.
RESERVE_SHARE = 0.25
RESERVE_MIN_MB = 2048.0


class ForkError(RuntimeError):
    """A helper could not be started, reached or asked to fork."""


def helpers_dir(out, machine):
    """The machine's helpers folder for the file `out` of a study: results/<stage>/<machine>/
    <env>/<file> -> results/scratch/<machine>/helpers (beside `out`'s folder, .helpers, when it
    is laid out otherwise): where supervise_duet and supervise_cell both find it."""
    out = os.path.abspath(out)
    env_dir = os.path.dirname(out)
    machine_dir = os.path.dirname(env_dir)
    if os.path.basename(machine_dir) != machine:
        return os.path.join(env_dir, ".helpers")
    return os.path.join(os.path.dirname(os.path.dirname(machine_dir)), "scratch", machine,
                        "helpers")


def helper_key(python, run_cell, framework, env):
    """The helper's key: a 16-digit hash of what it is (its generation left out), then, where
    env names a generation "ROUND:TAG", "-gROUND-" and 6 digits of TAG's hash."""
    stable = {k: v for k, v in env.items() if k not in VOLATILE and k != GENERATION}
    text = json.dumps([python, os.path.realpath(run_cell), framework, stable], sort_keys=True)
    key = hashlib.sha1(text.encode()).hexdigest()[:16]
    if env.get(GENERATION):
        rnd, _, tag = str(env[GENERATION]).partition(":")
        key += "-g%d-%s" % (int(rnd), hashlib.sha1(tag.encode()).hexdigest()[:6])
    return key


def address(folder, key):
    """The helper's socket: Linux's abstract namespace (no path length limit, gone with the
    process), else a file in the folder."""
    if sys.platform.startswith("linux"):
        tag = hashlib.sha1((os.path.realpath(folder) + key).encode()).hexdigest()[:24]
        return "@tfspeed-helper-" + tag
    return os.path.join(folder, key + ".sock")


def _sockaddr(addr):
    return "\0" + addr[1:] if addr.startswith("@") else addr


def process_token(pid):
    """"PID:START" (START: the process's start in clock ticks since boot), so that a helper
    does not take a reused pid for its owner; "PID" where /proc cannot say."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return "%d:%s" % (pid, handle.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError):
        return str(pid)


def snakemake_owner():
    """The process a helper outlives no longer than: the nearest ancestor that runs Snakemake
    (rule run_duet's job runs under it), else this process's parent."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmd = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%d/stat" % pid) as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if "snakemake" in cmd:
            return process_token(pid)
        if parent <= 1:
            break
        pid = parent
    return process_token(os.getppid())


def _ask(addr, payload, timeout=5.0):
    """One request to a helper; its one-line JSON answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(_sockaddr(addr))
        sock.sendall((json.dumps(payload) + "\n").encode())
        raw = read_line(sock)
    finally:
        sock.close()
    if not raw:
        raise ForkError("the helper at %s closed without an answer" % addr)
    return json.loads(raw.decode())


def ping(addr, timeout=5.0):
    """The helper's facts, or None when none answers there."""
    try:
        return _ask(addr, {"op": "ping"}, timeout)
    except (OSError, ValueError, ForkError):
        return None


def _gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
    except IndexError:
        return False


def stop_helpers(folder, wait_s=5.0, pattern="*", keep="", owner=None):
    """Ask every helper of this folder (a machine's) to exit, and wait until each is gone (its
    memory given back); kill one that does not go. Cheap where none runs. Returns their pids.
    pattern: only the helpers whose key matches it; keep: a key prefix left running; owner:
    only the helpers of that owner ("PID:START", process_token)."""
    stopped = []
    for info in sorted(glob.glob(os.path.join(folder, pattern + ".json"))):
        if keep and os.path.basename(info).startswith(keep):
            continue
        try:
            with open(info) as handle:
                facts = json.load(handle)
        except (OSError, ValueError):
            continue
        if owner is not None and facts.get("owner") != owner:
            continue
        pid = facts.get("helper_pid")
        try:
            _ask(facts["address"], {"op": "exit"}, timeout=2.0)
        except (OSError, ValueError, KeyError, ForkError):
            pid = pid if pid and _is_helper(pid) else None  # a stale file: nothing to wait for
        if pid:
            end = time.monotonic() + wait_s
            while not _gone(pid) and time.monotonic() < end:
                time.sleep(0.02)
            if not _gone(pid) and _is_helper(pid):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            stopped.append(pid)
        try:
            os.remove(info)
        except OSError:
            pass
    return stopped


def memory_mb():
    """(available, total) memory of the machine in MB, from /proc/meminfo; None where it cannot
    be read."""
    try:
        with open("/proc/meminfo") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
        return (float(fields["MemAvailable"].split()[0]) / 1024,
                float(fields["MemTotal"].split()[0]) / 1024)
    except (OSError, KeyError, ValueError, IndexError):
        return None


def reserve_mb(total_mb):
    """The memory a spawner leaves free before it starts a helper."""
    return max(RESERVE_MIN_MB, RESERVE_SHARE * total_mb)


def _is_helper(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return b"--helper" in handle.read()
    except OSError:
        return False


class ForkedProc(object):
    """A helper's child seen as duet.Worker sees a Popen: pid, stdin, stdout, poll, wait,
    returncode. Its exit status comes from the helper that reaps it."""

    def __init__(self, sock, pid, addr, origin):
        self.sock, self.pid, self.addr, self.origin = sock, pid, addr, origin
        self.stdin = sock.makefile("wb")
        self.stdout = sock
        self.returncode = None

    def poll(self):
        if self.returncode is None and _gone(self.pid):
            code = -1
            for _ in range(50):  # the helper reaps it on SIGCHLD
                try:
                    status = _ask(self.addr, {"op": "status", "pid": self.pid}, timeout=2.0)
                except (OSError, ValueError, ForkError):
                    break
                if status.get("exited"):
                    code = status.get("code")
                    break
                time.sleep(0.01)
            self.returncode = code
            try:
                self.stdin.close()
            except OSError:
                pass
            self.sock.close()
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("forked worker %d" % self.pid, timeout)
            time.sleep(0.01)
        return self.returncode


def fork_child(addr, args, env, timeout=30.0):
    """Ask the helper at `addr` for a child that runs run_cell.py `args` with `env`; the
    ForkedProc, once the child said it is there (`forked`, with its pid and the helper's
    facts)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(_sockaddr(addr))
        sock.sendall((json.dumps({"op": "fork", "argv": list(args), "env": dict(env),
                                  "cwd": os.getcwd()}) + "\n").encode())
        raw = b""
        while not raw.endswith(b"\n"):  # byte by byte: what follows is the worker's
            chunk = sock.recv(1)
            if not chunk:
                raise ForkError("the helper at %s closed without forking: %s"
                                % (addr, raw.decode("utf-8", "replace")[-500:]))
            raw += chunk
            if raw.endswith(b"\n") and not raw.startswith(duet.SERVE_PREFIX.encode()):
                raw = b""  # a stray line before the child's first
    except Exception:
        sock.close()
        raise
    parts = raw.decode().rstrip("\n").split(" ", 2)
    if parts[1] != "forked":
        sock.close()
        raise ForkError("the helper's child said %r, expected 'forked'" % parts[1])
    facts = json.loads(parts[2])
    sock.settimeout(None)
    origin = {"forked": True, "helper_pid": facts["helper_pid"],
              "helper_import_s": facts["helper_import_s"],
              "helper_children_before": facts["helper_children_before"]}
    return ForkedProc(sock, facts["pid"], addr, origin)


class ForkSpawner(object):
    """Makes a duet's workers (duet.Worker's `spawn`): a child of the env's helper, the helper
    found or started first (one per key, per machine folder); a fresh worker where that fails,
    its `origin` saying why."""

    def __init__(self, folder, owner=None, idle_s=IDLE_S, start_timeout_s=300.0,
                 reserve=reserve_mb):
        self.folder, self.idle_s, self.start_timeout_s = folder, idle_s, start_timeout_s
        self.reserve = reserve  # total MB -> MB to leave free (reserve_mb)
        self.needed = set()  # the keys this spawner's duet uses: never asked to make room
        self.owner = owner or snakemake_owner()
        self.helpers = {}  # key -> the helper's facts, or the error that kept it from running
        self.pending = {}  # key -> (Popen, log handle, started)
        self.retired = []  # pids of other generations' helpers this spawner asked to exit

    def _key(self, python, run_cell, framework, env):
        return helper_key(python, run_cell, framework, env)

    def _start(self, key, python, run_cell, framework, env):
        """Find the helper of `key` or start one (not waiting for its import)."""
        if key in self.helpers or key in self.pending:
            return
        os.makedirs(self.folder, exist_ok=True)
        addr = address(self.folder, key)
        facts = ping(addr)
        if facts is not None:
            self.helpers[key] = facts
            return
        if "-g" in key:  # a new round's generation: earlier rounds' helpers of it exit first
            base, rnd = key.split("-g")[0], key.split("-g")[1].split("-")[0]
            self.retired += stop_helpers(self.folder, pattern=base + "-g*",
                                         keep="%s-g%s-" % (base, rnd))
        self.make_room()
        henv = dict(env)
        henv.update(TMPDIR=self.folder, TEMP=self.folder, TMP=self.folder)
        log = open(os.path.join(self.folder, key + ".log"), "ab")
        try:
            proc = subprocess.Popen(
                [os.path.abspath(python), os.path.abspath(run_cell), "--helper",
                 "--address", addr, "--framework", framework, "--owner", self.owner,
                 "--idle-s", str(self.idle_s),
                 "--info", os.path.join(self.folder, key + ".json")],
                env=henv, cwd=self.folder, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            log.close()
            self.helpers[key] = ForkError("cannot start the helper: %s" % exc)
            return
        self.pending[key] = (proc, log, time.monotonic())

    def make_room(self):
        """While the machine's available memory is under the reserve, ask the folder's helper
        that forked longest ago (none this spawner's duet uses) to exit. Returns their pids."""
        stopped = []
        while True:
            mem = memory_mb()
            if mem is None or mem[0] >= self.reserve(mem[1]):
                return stopped
            idle = []
            for info in glob.glob(os.path.join(self.folder, "*.json")):
                key = os.path.basename(info)[:-len(".json")]
                if key in self.needed or key in self.pending:
                    continue
                facts = ping(address(self.folder, key), timeout=2.0)
                if facts is not None:
                    idle.append((facts.get("since_fork_s", 0.0), key))
            if not idle:
                return stopped
            key = max(idle)[1]
            pids = stop_helpers(self.folder, pattern=key)
            self.retired += pids
            stopped += pids
            self.helpers.pop(key, None)
            if not pids:
                return stopped

    def _wait(self, key):
        if key not in self.pending:
            return
        proc, log, started = self.pending.pop(key)
        addr = address(self.folder, key)
        try:
            while True:
                facts = ping(addr, timeout=1.0)
                if facts is not None:
                    self.helpers[key] = facts
                    return
                if proc.poll() is not None:
                    self.helpers[key] = ForkError("the helper exited (code %s) before it "
                                                  "listened; see %s" % (proc.returncode, log.name))
                    return
                if time.monotonic() - started > self.start_timeout_s:
                    proc.kill()
                    self.helpers[key] = ForkError("the helper did not listen within %g s"
                                                  % self.start_timeout_s)
                    return
                time.sleep(0.02)
        finally:
            log.close()

    def prepare(self, sides):
        """Start the helpers `sides` need at once (they import side by side), then wait."""
        keys = [self._key(s["python"], s["run_cell"], s["framework"], s["env"]) for s in sides]
        self.needed.update(keys)
        for key, s in zip(keys, sides):
            self._start(key, s["python"], s["run_cell"], s["framework"], s["env"])
        for key in keys:
            self._wait(key)

    def __call__(self, python, run_cell, args, env, prefix=()):
        if prefix:  # a command run through another (conda run): no helper of that env here
            return self._fresh(python, run_cell, args, env, prefix, "a prefixed worker command")
        key = self._key(python, run_cell, args[args.index("--framework") + 1], env)
        self.needed.add(key)
        try:
            self._start(key, python, run_cell, args[args.index("--framework") + 1], env)
            self._wait(key)
            facts = self.helpers[key]
            if isinstance(facts, Exception):
                raise facts
            return fork_child(facts["address"], args, env)
        except Exception as exc:
            return self._fresh(python, run_cell, args, env, prefix,
                               "%s: %s" % (type(exc).__name__, exc))

    @staticmethod
    def _fresh(python, run_cell, args, env, prefix, why):
        proc = duet.fresh_spawn(python, run_cell, args, env, prefix)
        proc.origin = {"forked": False, "fallback": why}
        return proc

    def helper_pids(self):
        """The helpers' pids (each its own process group): left out of the duet's other
        processes, as its workers are."""
        return {f["helper_pid"] for f in self.helpers.values()
                if isinstance(f, dict) and f.get("helper_pid")}
