#!/usr/bin/env python
"""Run one benchmark cell in this (fresh) process and write its result as JSON.

Runs inside the cell's own environment: Python 3.7 to 3.13, numpy and the framework only. It is
started by supervise_cell.py, which enforces the time and memory limits, writes `failed` cells for
crashes, and adds the machine's provenance. Usage:

    python run_cell.py --cell '{"model": "small", ...}' --rule '{"kind": "fixed", ...}' --out F
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


def run(cell, rule_dict, framework):
    from tfspeed import backends, stats, timing
    from tfspeed.models import FAULT_MODELS

    if cell["model"] in FAULT_MODELS:
        faults.trigger(cell["model"])
    rule = timing.Rule(**rule_dict)
    backend = backends.load(cell, framework)
    prepared = backend.prepare(dict(cell, framework=framework), rule)
    traces = prepared.traces or (lambda: None)
    out = {"status": "ok", "reason": ""}
    if prepared.step is not None:
        t = timing.clock()
        loss_first = prepared.step()
        out["first_call_s"] = timing.clock() - t
        traces_first = traces()
        samples, stopped_by, wall = timing.sample_calls(prepared.step, rule)
        loss_last = prepared.step()
    else:
        t = timing.clock()
        first = prepared.run_chunk(1)
        out["first_call_s"] = timing.clock() - t
        out["first_step_s"] = first[0] if first else None
        traces_first = traces()
        samples, stopped_by, wall = timing.sample_stream(prepared.run_chunk, rule)
        loss_first = loss_last = None
    out.update({
        "samples_s": samples, "stopped_by": stopped_by, "timed_wall_s": wall,
        "traces_after_first_call": traces_first,
        "retraces_during_timing": (None if traces_first is None
                                   else (traces() or 0) - traces_first),
        "loss_first": loss_first, "loss_last": loss_last, "rule": rule.as_dict(),
        "summary": stats.summarize(samples, level=rule.level),
        "framework_facts": prepared.facts,
    })
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", required=True, help="the cell's axes as JSON")
    parser.add_argument("--rule", required=True, help="the stopping rule as JSON")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    cell, rule = json.loads(args.cell), json.loads(args.rule)
    base = {"python": platform.python_version(), "python_executable": sys.executable}
    try:
        import numpy
        base["numpy_version"] = numpy.__version__
    except ImportError:
        pass
    from tfspeed.backends import Unsupported
    try:
        result = run(cell, rule, args.framework)
    except Unsupported as exc:
        result = {"status": "skipped", "reason": str(exc)}
    except Exception as exc:  # written down as failed by the supervisor, with the log tail
        traceback.print_exc()
        result = {"status": "failed", "reason": "%s: %s" % (type(exc).__name__, exc)}
    result.update(base)
    write_json(args.out, result)
    sys.stdout.flush()
    # Some old TF builds crash in their atexit hooks; the result is safe on disk by now.
    os._exit(0)


if __name__ == "__main__":
    main()
