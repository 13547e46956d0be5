"""A fork helper of an env (scripts/run_cell.py --helper; driver/study/forkserver.py is its
driver side; docs/design.md, "A duet's workers"): a process that imported the framework once and
forks each duet's or pair's worker from it. Runs inside the env's Python (3.7 to 3.13); the
worker's own code (run_cell.py: the framework's import, the --serve loop, the protocol's replies)
is handed in, so this module holds the process plumbing only: the socket, the children, the owner.
"""
import io
import json
import os
import signal
import socket
import sys
import tempfile
import time
import traceback

from tfspeed.atomic import write_json


def read_line(sock) -> bytes:
    """One newline-ended message from a socket (what the helper and its driver both send), or
    what came before the peer closed."""
    raw = b""
    while not raw.endswith(b"\n"):
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        raw += chunk
    return raw


def _alive(owner):
    """Whether the owner "PID" or "PID:START" (its start time in clock ticks since boot, from
    /proc/PID/stat: a reused pid is another process) still runs."""
    pid, _, start = str(owner).partition(":")
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if start:
        try:
            with open("/proc/%s/stat" % pid) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return fields[19] == start and fields[0] != "Z"
        except (OSError, IndexError):
            return False
    return True


# The longest a helper sleeps between looks at its owner and its idle limit: with forked cells
# every env's helper sleeps while a cell times, and its wake-ups are that cell's foreign CPU.
WAKE_S = 4.0


def helper(address, framework, owner, idle_s, info, preload, reply, worker_main):
    """run_cell.py --helper: a fork helper of this env (driver/study/forkserver.py; docs/design.md, "A duet's
    workers"). Imports the framework once, as a worker does before `loaded`, listens on the Unix
    socket `address` (a leading "@": Linux's abstract namespace), and answers one JSON request
    a connection:
      {"op": "fork", "argv": [...], "env": {...}, "cwd": "..."}  fork a child that becomes an
          ordinary --serve worker (worker_main(argv)) speaking over this connection (its stdin, stdout
          and stderr), in a session of its own; its first line is `@@tfspeed forked` with its
          pid and this helper's facts
      {"op": "status", "pid": n}   whether that child has exited, and its exit status
      {"op": "ping"}               this helper's facts, its children so far and the seconds
                                   since it last forked (or started); not a use of it
      {"op": "exit"}               exit now
    Exits when idle (no request and no live child) for `idle_s`, when asked, or when `owner`
    (the Snakemake process, "PID:START") is gone. Children are reaped as they exit (SIGCHLD); a
    child's crash is its own (its coordinator reads it as a dying worker)."""
    from tfspeed import machine  # noqa: F401  (what serve imports first)

    import_s = preload(framework)
    facts = {"helper_pid": os.getpid(), "helper_import_s": import_s, "framework": framework,
             "address": address, "owner": owner, "idle_s": idle_s}
    live, exited = set(), {}
    state = {"children": 0, "last": time.monotonic(), "forked": time.monotonic()}

    def reap(*_):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            live.discard(pid)
            exited[pid] = (os.WEXITSTATUS(status) if os.WIFEXITED(status)
                           else -os.WTERMSIG(status))
            state["last"] = time.monotonic()

    signal.signal(signal.SIGCHLD, reap)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + address[1:] if address.startswith("@") else address)
    server.listen(8)
    if info:
        write_json(info, facts)
    reply("helper", facts)
    while True:
        reap()
        if owner and not _alive(owner):
            break
        idle_left = idle_s - (time.monotonic() - state["last"])
        if not live and idle_left < 0:
            break
        server.settimeout(WAKE_S if live else max(0.05, min(WAKE_S, idle_left)))
        try:
            conn, _ = server.accept()
        except (socket.timeout, InterruptedError):
            continue
        try:
            conn.settimeout(10)
            request = json.loads(read_line(conn).decode() or "{}")
            op = request.get("op")
            if op != "ping":  # a ping (another duet looking for room) is not a use
                state["last"] = time.monotonic()
            if op == "fork":
                state["forked"] = time.monotonic()
                before = state["children"]
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    server.close()
                    _become_worker(conn, request, dict(facts, helper_children_before=before),
                                   reply, worker_main)
                state["children"] += 1
                live.add(pid)
            elif op == "status":
                reap()
                pid = int(request["pid"])
                conn.sendall((json.dumps({"exited": pid in exited, "code": exited.get(pid),
                                          "live": pid in live}) + "\n").encode())
            elif op == "ping":
                conn.sendall((json.dumps(dict(
                    facts, children=state["children"], live=len(live),
                    since_fork_s=time.monotonic() - state["forked"])) + "\n").encode())
            elif op == "exit":
                conn.sendall(b'{"exiting": true}\n')
                conn.close()
                break
        except Exception:  # a bad request is the requester's; the helper goes on
            traceback.print_exc()
        finally:
            conn.close()
    server.close()
    if info:
        try:
            os.remove(info)
        except OSError:
            pass
    sys.stdout.flush()
    os._exit(0)


def _become_worker(conn, request, facts, reply, worker_main):
    """In a forked child: a session of its own (its process group is what the meters and the
    memory police read), the connection as stdin, stdout and stderr, the requester's
    environment and folder, then an ordinary --serve worker (main)."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        conn.settimeout(None)  # blocking again (the file status is shared with its copies)
        fd = conn.fileno()
        for target in (0, 1, 2):
            os.dup2(fd, target)
        conn.detach()
        os.close(fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        os.environ.clear()
        os.environ.update(request.get("env") or {})
        tempfile.tempdir = None  # TMPDIR is the requester's (its duet's scratch folder)
        if request.get("cwd"):
            os.chdir(request["cwd"])
        reply("forked", dict(facts, pid=os.getpid()))
        worker_main(list(request["argv"]))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)
