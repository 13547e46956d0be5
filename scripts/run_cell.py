#!/usr/bin/env python
"""Run one benchmark cell in this (fresh) process and write its result as JSON.

Runs inside the cell's own environment: Python 3.7 to 3.13, numpy and the framework only. It is
started by supervise_cell.py, which enforces the time and memory limits, writes `failed` cells for
crashes, and adds the machine's provenance. Usage:

    python run_cell.py --cell '{"model": "small", ...}' --rule '{"kind": "fixed", ...}' --out F

The timed window is announced on stdout (WINDOW_START / WINDOW_END lines) so that the supervisor can
measure its own and the orchestrator's CPU over exactly that window.
"""
import argparse
import json
import os
import platform
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tfspeed import faults  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402

SERVE_PREFIX = "@@tfspeed"


def announce(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def threads_used(prepared):
    """The threads this process actually runs with, from each library (not from the env)."""
    from tfspeed import machine

    facts = prepared.facts
    out = {"os_threads": machine.os_threads(), "blas": machine.blas_threads(),
           "pinned": machine.pinned_threads()}
    for key in ("intra_op_threads", "inter_op_threads"):
        if key in facts:
            out[key] = facts[key]
    return out


def run(cell, rule_dict, framework, foreign_max_share):
    from tfspeed import backends, machine, samefunction, stats, timing, usermodels
    from tfspeed.machine import WINDOW_END, WINDOW_START
    from tfspeed.models import FAULT_MODELS

    if cell["model"] in FAULT_MODELS:
        faults.trigger(cell["model"])
    usermodels.register_cell(cell)  # a user's own model or data (config `models`, `data`)
    rule = timing.Rule(**rule_dict)
    backend = backends.load(cell, framework)
    prepared = backend.prepare(dict(cell, framework=framework), rule)
    traces = prepared.traces or (lambda: None)
    out = {"status": "ok", "reason": ""}
    t = timing.clock()
    loss_first = prepared.step()
    out["first_call_s"] = timing.clock() - t
    traces_first = traces()
    out.update(timing.warm_up(prepared.step, rule, out["first_call_s"]))
    per = float(rule.steps_per_call)  # fit_epoch: a call is an epoch of this many steps
    out["warmup_block_medians_s"] = [m / per for m in out["warmup_block_medians_s"]]
    traces_warm = traces()
    window = machine.CpuWindow()
    announce(WINDOW_START)
    window.start()
    samples, stopped_by, wall, too_few = timing.sample_calls(prepared.step, rule)
    cpu = window.stop()
    announce(WINDOW_END)
    samples = [s / per for s in samples]  # seconds per training step, as every other cell
    threads = threads_used(prepared)  # still inside the framework's steady state
    loss_last = prepared.step()
    # after the timed window: same weights, same outputs? (a layer description only)
    if usermodels.is_user(cell["model"]) and not usermodels.built_by_code(cell["model"]):
        out["same_function"] = samefunction.check(cell, framework)
    out.update({
        "samples_s": samples, "steps_per_call": rule.steps_per_call,
        "stopped_by": stopped_by, "timed_wall_s": wall,
        "too_few_samples": too_few is not None, "too_few_reason": too_few,
        "traces_after_first_call": traces_first,
        "retraces_during_warmup": (None if traces_first is None
                                   else (traces_warm or 0) - traces_first),
        "retraces_during_timing": (None if traces_warm is None
                                   else (traces() or 0) - traces_warm),
        "loss_first": loss_first, "loss_last": loss_last, "rule": rule.as_dict(),
        "summary": stats.summarize(samples, level=rule.level),
        "framework_facts": prepared.facts, "threads": threads, "cpu_window": cpu,
        "foreign_cpu_max_share": foreign_max_share,
        # beyond the threshold by more than the tick counts' resolution (tfspeed.machine)
        "foreign_cpu_flag": machine.foreign_flag(cpu, foreign_max_share),
    })
    return out


def _reply(tag, payload):
    """A protocol line of --serve mode (the framework's own output goes to stderr or other lines)."""
    announce("%s %s %s" % (SERVE_PREFIX, tag, json.dumps(payload, sort_keys=True)))


def _build(cell, rule, framework):
    """Build the cell's model, time its first call and warm it up: what a fresh process does
    before its timed window."""
    from tfspeed import backends, timing, usermodels

    usermodels.register_cell(cell)
    backend = backends.load(cell, framework)
    t0 = timing.clock()
    prepared = backend.prepare(dict(cell, framework=framework), rule)
    t = timing.clock()
    prepared.step()
    first = timing.clock() - t
    warm = timing.warm_up(prepared.step, rule, first)
    return prepared, {"first_call_s": first, "build_s": t - t0,
                      "warmup_calls": warm["warmup_calls"], "warmup_s": warm["warmup_s"],
                      "warmup_stopped_by": warm["warmup_stopped_by"]}


# Untimed calls that start a window where the command does not say (workers before config
# duets.settle_calls: the duet records without a `settle` in their design).
SETTLE = 3


def _window(step, seconds, min_calls, per, settle=SETTLE):
    """Timed calls for about `seconds` (at least `min_calls`): the samples, per step. The first
    `settle` calls are not timed: the other side of a duet ran last, and its caches and threads
    are this side's to win back (the same for both sides; config duets.settle_calls, and what
    more of them would change: make settle-check)."""
    from tfspeed import timing

    clock = timing.clock
    for _ in range(settle):
        step()
    samples = []
    end = clock() + seconds
    while True:
        t = clock()
        step()
        now = clock()
        samples.append((now - t) / per)
        if now >= end and len(samples) >= min_calls:
            return samples


def _mix(steps, seconds, block, per, settle=1):
    """The cells of one process interleaved call by call: a block of each cell (after `settle`
    untimed calls of the block's cell), the cells in order and then in reverse order (ABBA for
    two: a linear drift falls on all alike), for about `seconds` in all: the samples per cell,
    per step. The cells then see the machine's state within tens of milliseconds of each other,
    not within a window's quarter second.

    `per`: each cell's steps per call (a number: the same for all). A block covers about the same
    steps of every cell: max(block, the most steps of one call) steps, so a fit over an epoch of
    50 steps (one call) meets 50 train_on_batch calls, not 4: blocks of equal calls would give
    the long call 50 times the other's share of every machine state."""
    from tfspeed import timing

    clock = timing.clock
    pers = list(per) if isinstance(per, (list, tuple)) else [per] * len(steps)
    span = max([block] + [int(p) for p in pers])
    calls = [max(1, int(round(span / float(p)))) for p in pers]
    samples = [[] for _ in steps]
    forward = list(range(len(steps)))
    end = clock() + seconds
    k = 0
    while True:
        for which in (forward if k % 4 in (0, 3) else forward[::-1]):
            step, p = steps[which], float(pers[which])
            for _ in range(settle):
                step()
            for _ in range(calls[which]):
                t = clock()
                step()
                samples[which].append((clock() - t) / p)
        k += 1
        if clock() >= end and k >= 2:
            return samples


def cell_rule(rule_dict, cell):
    """The stopping rule of one cell of a worker that holds several: the rule the study gives
    (its left cell's), where only a fit over an epoch keeps `steps_per_call` (driver/study/
    plan.py stop_rule): a fit_epoch cell beside a train_on_batch cell calls 50 steps at a time,
    its partner one."""
    from tfspeed import timing

    values = dict(rule_dict)
    if cell.get("api") != "fit_epoch":
        values.pop("steps_per_call", None)
    return timing.Rule(**values)

def _kernel(seconds, size=128):
    """A fixed NumPy kernel (a size x size float32 matrix product), timed call by call for about
    `seconds` (at least 5 calls): the same work in every process and env."""
    import numpy as np

    from tfspeed import timing

    clock = timing.clock
    a = np.random.RandomState(0).rand(size, size).astype(np.float32)
    np.dot(a, a)
    samples = []
    end = clock() + seconds
    while True:
        t = clock()
        np.dot(a, a)
        now = clock()
        samples.append(now - t)
        if now >= end and len(samples) >= 5:
            return samples


def _preload(framework):
    """Import the framework's module (tfspeed/frameworks.py: its catalogue row's `module`) and
    nothing else: no mode chosen, no tensor made. The seconds it took (0 for an unknown one)."""
    import importlib

    from tfspeed import frameworks, timing

    row = frameworks.get(framework)
    t0 = timing.clock()
    if row is not None and getattr(row, "module", None):
        try:
            importlib.import_module(row.module)
        except ImportError:  # a cell that needs no framework import (numpy's matmul); the
            pass  # build says what is missing where one does
    return timing.clock() - t0


def serve(cell, rule_dict, framework, wait_build=False, partner=None):
    """--serve: a long-lived worker for paired runs (driver/study/duet.py). Builds the cell,
    warms it up, says `ready`, then answers commands on stdin, one per line. With
    `wait_build` (--wait-build) it first imports the framework alone, says `loaded`, and builds
    on the command `build`: the coordinator lets both workers import at once (the import is
    most of a worker's start and times nothing) and builds and warms them up one after the
    other. Then:
      window S [W [K]]  time calls for about S seconds (of cell W: 1 the partner; after K
                   untimed calls, default SETTLE); reply `window` with the samples
      mix S K      (cells in one process) all cells interleaved in blocks of K steps (at
                   least one call of each: _mix) for about S seconds; reply `mix` with every
                   cell's samples per step, in order
      kernel S     time a fixed NumPy kernel for about S seconds (a covariate of the state of
                   the machine and of this process); reply `kernel` with the samples
      rebuild      a new model in this process (Keras' session cleared first): `ready` again
      quit         exit
    The coordinator alternates two such workers window by window, so both sides of a
    comparison see the same state of the machine. With `partner` (--partner, a second cell of
    the same env) one worker holds both sides: it builds and warms up `cell`, then `partner`, in
    this one process (`ready` carries the partner's facts under "partner"), and `window S 1`
    times the partner; each cell runs under its own rule (cell_rule: a fit over an epoch beside
    a one-step API), its samples per step; both sides then share the process's own state as
    well as the machine's (docs/design.md, "Pairs in one process")."""
    from tfspeed import machine

    import_s = None
    if wait_build:
        import_s = _preload(framework)
        _reply("loaded", {"import_s": import_s})
        for line in sys.stdin:
            if line.split()[:1] == ["build"]:
                break
            if line.split()[:1] == ["quit"]:
                sys.stdout.flush()
                os._exit(0)
        else:  # the coordinator went away
            os._exit(0)
    partners = ([partner] if isinstance(partner, dict) else list(partner or []))
    cells = [cell] + partners
    rules = [cell_rule(rule_dict, c) for c in cells]  # each cell's own steps per call
    pers = [float(r.steps_per_call) for r in rules]

    def build_all():
        built = [_build(c, r, framework) for c, r in zip(cells, rules)]
        facts = dict(built[0][1])
        if partners:
            facts["partner"] = built[1][1]
            facts["partners"] = [b[1] for b in built[1:]]
        return [b[0] for b in built], facts

    prepared, facts = build_all()
    if import_s is not None:
        facts["import_s"] = import_s
    _reply("ready", facts)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "window":
            which = int(words[2]) if len(words) > 2 else 0
            settle = int(words[3]) if len(words) > 3 else SETTLE
            meter = machine.CpuWindow()  # this worker's own session: the rest is foreign
            meter.start()
            samples = _window(prepared[which].step, float(words[1]), 5, pers[which], settle)
            _reply("window", {"samples_s": samples, "cpu": meter.stop(), "settle": settle})
        elif words[0] == "mix":  # one cell or more (one: plain blocks of calls)
            meter = machine.CpuWindow()
            meter.start()
            both = _mix([p.step for p in prepared], float(words[1]), int(words[2]), pers)
            _reply("mix", {"samples_s": both, "cpu": meter.stop()})
        elif words[0] == "kernel":
            _reply("kernel", {"samples_s": _kernel(float(words[1]))})
        elif words[0] == "rebuild":
            _clear_session(framework, cell)
            prepared, facts = build_all()
            _reply("ready", facts)
        elif words[0] == "quit":
            break
    sys.stdout.flush()
    os._exit(0)


def _clear_session(framework, cell):
    from tfspeed import backends

    clear = backends.hook(framework, "clear_session")  # the framework's own (tfspeed/backends/)
    if clear is not None:
        clear(cell)


def helper_main(argv):
    parser = argparse.ArgumentParser(description="a fork helper of this env (tfspeed/forkhelper.py)")
    parser.add_argument("--helper", action="store_true")
    parser.add_argument("--address", required=True, help="the Unix socket (@name: abstract)")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--owner", help="exit when this process (PID or PID:START) is gone")
    parser.add_argument("--idle-s", type=float, default=120.0)
    parser.add_argument("--info", help="write this helper's facts here (removed at exit)")
    args = parser.parse_args(argv)
    from tfspeed import forkhelper

    return forkhelper.helper(args.address, args.framework, args.owner, args.idle_s, args.info,
                             preload=_preload, reply=_reply, worker_main=main)


def main(argv=None):
    if "--helper" in (sys.argv[1:] if argv is None else argv):
        return helper_main(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", required=True, help="the cell's axes as JSON")
    parser.add_argument("--rule", required=True, help="the stopping rule as JSON")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--foreign-cpu-max-share", type=float, required=True)
    parser.add_argument("--out")
    parser.add_argument("--serve", action="store_true",
                        help="a long-lived worker answering commands on stdin (see serve())")
    parser.add_argument("--wait-build", action="store_true",
                        help="with --serve: import the framework, say `loaded`, build on `build`")
    parser.add_argument("--partner", action="append",
                        help="with --serve: another cell (JSON) built in this same process "
                        "(repeat for more: cells 1, 2, ...)")
    args = parser.parse_args(argv)
    cell, rule = json.loads(args.cell), json.loads(args.rule)
    if args.partner and not args.serve:
        parser.error("--partner needs --serve")
    if args.serve:
        return serve(cell, rule, args.framework, wait_build=args.wait_build,
                     partner=[json.loads(p) for p in args.partner or []])
    if not args.out:
        parser.error("--out is required without --serve")
    base = {"python": platform.python_version(), "python_executable": sys.executable}
    try:
        import numpy
        base["numpy_version"] = numpy.__version__
    except ImportError:
        pass
    from tfspeed.backends import Unsupported
    from tfspeed.usermodels import BuilderError, provenance
    try:
        result = run(cell, rule, args.framework, args.foreign_cpu_max_share)
    except Unsupported as exc:
        result = {"status": "skipped", "reason": str(exc)}
    except BuilderError as exc:  # the user's code: its own message names file, function, env
        traceback.print_exc()
        result = {"status": "failed", "reason": str(exc)}
    except Exception as exc:  # written down as failed by the supervisor, with the log tail
        traceback.print_exc()
        result = {"status": "failed", "reason": "%s: %s" % (type(exc).__name__, exc)}
    result.update(base)
    code = provenance(cell)  # a user's builder and data file: which text, which bytes
    if code:
        result["user_code"] = code
    write_json(args.out, result)
    sys.stdout.flush()
    # Some old TF builds crash in their atexit hooks; the result is safe on disk by now.
    os._exit(0)


if __name__ == "__main__":
    main()
