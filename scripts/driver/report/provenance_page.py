"""docs/PROVENANCE.md, the published results' provenance page: per published run its machine key
and fingerprint, the commit that timed it, its dates and wall time (and whether that wall time
includes env builds: a run from a fresh clone builds its envs between its processes); which run
of each key the derived files show, and why; their checksums; and the commit that regenerated
them. scripts/republish.py writes it."""
from driver.report.fmt import wall_text
from driver.study.publishing import SHOWN, sha256

# The one line of PROVENANCE.md that the published-files check ignores (it names the commit that
# regenerated the files, which changes with every commit).
REGENERATED_LINE = "- regenerated at commit: "


def machine_text(facts: dict) -> str:
    """'AMD EPYC, 2 CPUs, no GPU' from a run's machine facts."""
    gpus = facts.get("gpus")
    names = [str(g.get("name") if isinstance(g, dict) else g) for g in gpus] if gpus else []
    return "%s, %s CPUs, %s" % (facts.get("cpu_model") or "CPU unknown",
                                facts.get("cpu_count") or "?",
                                "GPU " + ", ".join(names) if names else "no GPU")


def builds_text(builds: dict | None) -> str:
    """What a run's wall time holds of env builds, from publishing.env_builds."""
    if not builds or not builds.get("envs"):
        return "env builds not recorded"
    if not builds["built"]:
        return "every env (%d) built before it: no env build in its wall time" % builds["envs"]
    text = "built %d of its %d envs itself (a fresh clone or new envs)" % (builds["built"],
                                                                           builds["envs"])
    if builds["inside"]:
        text += "; %d of them after its first process, so its wall time includes those " \
                "builds (their install and bytecode steps: %.0f s)" % (builds["inside"],
                                                                       builds["inside_s"])
    else:
        text += ", all before its first process: not in its wall time"
    return text


def provenance_note(runs: list[dict], used: list[dict], files: dict, code_commit=None,
                    builds: dict | None = None) -> str:
    """PROVENANCE.md: per published run its machine key and fingerprint, the commit that timed
    it, its dates and wall time, and the env builds that wall time holds (`builds`: {(key, run
    id): publishing.env_builds}); which run of each key the derived files show, and why; the
    derived files' checksums; and, on the one line the check ignores, the commit that
    regenerated them."""
    builds = builds or {}
    used_ids = {(r["machine"], r["run_id"]) for r in used}
    lines = [
        "# Published tfspeed results: provenance",
        "",
        "The measurements are under [`data/`](data/): one folder per machine key, one per run",
        "in it, each with its `run.json` and every process's cell file (all samples) in",
        "`processes.tar.xz` ([publishing](publishing.md)). Everything else here, `index.html`,",
        "`study.xlsx`, `tables/`, `RESULTS.md` and this page, is regenerated from them by the",
        "current code (`make republish`, scripts/republish.py); `tests/unit/docs/test_published.py`",
        "fails when a committed file differs from what the code gives.",
        "",
        "## Runs",
        "",
    ]
    if not runs:
        lines.append("No run is published yet: `docs/data/` holds none. The report published "
                     "before the measurements were kept is in [the archive](archive/README.md), "
                     "not current and not regenerable.")
    else:
        lines += ["| machine key | run | machine | fingerprint | run commit | first start (UTC) "
                  "| last end (UTC) | wall time | processes (ok) | in the derived files |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for run in runs:
            fp = (run.get("fingerprint") or {}).get("hash") or "none recorded"
            commit = run.get("commit") or "unknown"
            lines.append("| %s | [%s](data/%s/%s/run.json) | %s | `%s` | `%s` (%s) | %s | %s | %s "
                         "| %s (%s) | %s |" % (
                             run["machine"], run["run_id"], run["machine"], run["run_id"],
                             machine_text(run.get("machine_facts") or {}),
                             str(fp)[:16], str(commit)[:12], run.get("commit_source") or "?",
                             run.get("started_utc"), run.get("ended_utc"),
                             wall_text(run.get("wall_s")), run.get("processes"), run.get("ok"),
                             "yes" if (run["machine"], run["run_id"]) in used_ids else
                             "no (another run of this key is shown)"))
        lines += ["", "Wall time is from a run's first process to its last process's end "
                  "(`run.json`). Env builds in it:", ""]
        for run in runs:
            lines.append("- %s/%s: %s." % (run["machine"], run["run_id"], builds_text(
                builds.get((run["machine"], run["run_id"])))))
        lines += ["", "Which run of a machine key the derived files show (one per key: two runs "
                  "of a key both hold, say, repeat 0 of a cell): the one `data/<key>/%s` names, "
                  "else the fullest study (most grids), newest among equals "
                  "([publishing](publishing.md)):" % SHOWN, ""]
        for run in used:
            lines.append("- %s: %s (%s)." % (run["machine"], run["run_id"],
                                             run.get("shown_why") or "the newest"))
        primary = max(used, key=lambda r: (str(r.get("ended_utc")), r["run_id"])) if used \
            else None
        if primary:
            lines += ["", "The analysis settings (reference env, level, equivalence band, FDR) are "
                      "those of the newest shown run, %s/%s." % (primary["machine"],
                                                                 primary["run_id"])]
    lines += ["", "## Derived files", ""]
    if files:
        lines += ["| file | bytes | sha256 |", "| --- | ---: | --- |"]
        for name in sorted(files):
            path = files[name]
            lines.append("| %s | %d | `%s` |" % (name, path.stat().st_size, sha256(path)))
    else:
        lines.append("None besides this page, the results page and the placeholder report.")
    lines += ["", REGENERATED_LINE + ("`%s`" % code_commit if code_commit else "(not recorded)")]
    return "\n".join(lines) + "\n"
