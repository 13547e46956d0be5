"""Probe this machine before a study times anything, and stop the study when the machine is not the
one that wrote the cells already under its key (driver/study/probe.py says how that is decided).

Runs on the workflow's own Python, as the rule `probe_machine`: each probe cell in `--processes`
fresh processes, through the same supervisor as every cell (scripts/supervise_cell.py, under the
machine's timing lock), into results/machines/<key>/probes/<stamp>/. Then:
- no cell file under the key yet: this probe becomes the key's reference (probe.json);
- else the probe and the fingerprint are checked against the reference and the cell files: a
  change stops the study (exit 1, the message on stderr and in probe.stopped.json), unless
  --force, which goes on and appends the change to overrides.json.
The output (probe.latest.json) holds the probe, the verdict and the tests.
"""
import argparse
import datetime
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import supervise_cell  # noqa: E402

from driver.study import fingerprint, layout, probe  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402


def cell_fingerprints(machine):
    """Fingerprint hash (None where a file carries none) of every cell file under the key and its
    twin key."""
    hashes = []
    for key in (machine, layout.twin_key(machine)):
        for path in sorted(glob.glob(os.path.join(layout.CELLS, key, "*", "*.r[0-9]*.json"))):
            try:
                with open(path) as handle:
                    doc = json.load(handle)
            except (OSError, ValueError):
                continue
            fp = ((doc.get("provenance") or {}).get("machine") or {}).get("fingerprint") or {}
            hashes.append(fp.get("hash"))
    return hashes


def run_probe(args, stamp):
    """Every probe cell in args.processes processes, interleaved; their cell files."""
    folder = os.path.join(layout.probe_dir(args.machine), "probes", stamp)
    files = []
    for rep in range(args.processes):
        for item in json.loads(args.cells):
            cell, rule = item["cell"], item["rule"]
            out = os.path.join(folder, args.env, "%s.r%d.json" % (item["id"], rep))
            argv = ["--cell", json.dumps(cell), "--rule", json.dumps(rule), "--env", args.env,
                    "--machine", args.machine, "--repeat", str(rep), "--timeout-s",
                    str(args.timeout_s), "--memory-mb", str(args.memory_mb), "--threads",
                    args.threads, "--foreign-cpu-max-share", str(args.foreign_cpu_max_share),
                    "--out", out]
            argv += ["--conda"] if args.conda else ["--manifest", args.manifest]
            if args.lock:
                argv += ["--lock", args.lock]
            supervise_cell.main(argv)
            files.append(out)
    records = []
    for path in files:
        with open(path) as handle:
            records.append(json.load(handle))
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", required=True)
    parser.add_argument("--env", required=True)
    parser.add_argument("--manifest")
    parser.add_argument("--conda", action="store_true")
    parser.add_argument("--cells", required=True, help='JSON [{"id", "cell", "rule"}]')
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--min-change", type=float, required=True)
    parser.add_argument("--force", default="false", choices=["true", "false", "True", "False"])
    parser.add_argument("--timeout-s", type=int, default=0)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--foreign-cpu-max-share", type=float, default=0.05)
    parser.add_argument("--lock", default=None)
    parser.add_argument("--study-stamp", default=None,
                        help="the rule's stamp (what this study had left to run), kept in the output")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    force = args.force.lower() == "true"
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    records = run_probe(args, stamp)
    failed = [r for r in records if r.get("status") != "ok"]
    current = {"machine": args.machine, "env": args.env, "started_utc": now.isoformat(),
               "stamp": stamp, "processes": args.processes,
               "fingerprint": fingerprint.read_fingerprint(), "cells": probe.summarize(records),
               "failed": [{"cell_id": r.get("cell_id"), "reason": r.get("reason")} for r in failed]}
    ref_path = layout.probe_reference(args.machine)
    reference = None
    if os.path.exists(ref_path):
        with open(ref_path) as handle:
            reference = json.load(handle)
    hashes = cell_fingerprints(args.machine)
    verdict, message, details = probe.decide(args.machine, reference, current, hashes,
                                             args.min_change, force)
    doc = dict(current, verdict=verdict, message=message, details=details, force=force,
               reference_stamp=(reference or {}).get("stamp"), study_stamp=args.study_stamp)
    base = layout.probe_dir(args.machine)
    if verdict == "stop":
        write_json(os.path.join(base, "probe.stopped.json"), doc)
        sys.stderr.write("\n[tfspeed] " + message + "\n\n")
        sys.stderr.flush()
        return 1
    if verdict == "forced":
        path = os.path.join(base, "overrides.json")
        overrides = []
        if os.path.exists(path):
            with open(path) as handle:
                overrides = json.load(handle)
        overrides.append({"stamp": stamp, "changes": details["changes"], "fingerprint":
                          current["fingerprint"]["hash"], "reference_stamp": doc["reference_stamp"]})
        write_json(path, overrides)
        sys.stderr.write("\n[tfspeed] " + message + "\n\n")
    if reference is None or not hashes:
        if failed and not current["cells"]:
            sys.stderr.write("[tfspeed] the probe's cells failed; no reference recorded\n")
        else:
            write_json(ref_path, current)
            doc["reference_stamp"] = stamp
    print("[tfspeed] " + message)
    write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
