"""The duets' own checks, in words, per machine: built once from the duets_aa and duet_rounds
tables (driver/tables/duets.py, duet_rounds.py) and printed by the report's duets section and
docs/RESULTS.md.

- A/A: the reference env's headline cell in a duet against itself. Both sides run the same code,
  so a row called faster or slower is a false positive of the duet procedure, and its ratio
  (the side timed second over the side timed first) is the order bias.
- Health check: per mode, a replicate round whose duets moved every row together (`moved`: the
  F test of rounds rejects and the round's shift interval leaves 0 out), a state of the
  machine the duets did not cancel; and, where rows had a second look, look 2 against look 1
  over those rows (sequential.looks_test: each row's look-2 mean against its look-1 mean
  beyond its spread, the selection of open rows simulated), which the round test cannot see
  (a row x period effect, not every row moving together). It reads the duets table's look-1
  columns (look1_log_ratio, look1_sd_log); a table without them says nothing of it.

Runs whose tables lack them (duets from before A/A rows or the health check) say nothing: a
machine without A/A rows gets no A/A sentence, a table without rounds no health sentence. The
A/A rows are never versions: they are read from duets_aa only, never from duets."""
import math
from dataclasses import dataclass

import pandas as pd

from driver.report.fmt import col, ncol, num, records, text
from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER, norm_code

MODE_ORDER = ("graph", "eager")


@dataclass(frozen=True)
class Check:
    machine: str
    kind: str  # "aa" or "rounds"
    text: str
    cls: str  # "ok" (nothing found) or "warn" (a false positive, a round that moved)
    rows: tuple  # the ids of the table rows it covers: "machine:mode[:round]"


def _modes(df: pd.DataFrame) -> list[str]:
    found = {text(m) for m in col(df, "mode").dropna()}
    return [m for m in MODE_ORDER if m in found] + sorted(found - set(MODE_ORDER))


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def _at_headline_level(rows: list, duets: pd.DataFrame | None, machine: str) -> dict | None:
    """calibration.threshold_rate of the A/A rows at the level of the same machine's headline
    rows (1 - ci_level of the duets table), or None without it."""
    from driver.stats.calibration import threshold_rate

    if duets is None or duets.empty or "ci_level" not in duets.columns:
        return None
    head = duets[col(duets, "machine").map(text) == machine] if machine else duets
    level = ncol(head, "ci_level").dropna()
    have = [r for r in rows if all(math.isfinite(num(r.get(c))) for c in ("p", "sd_log", "n"))]
    if level.empty or not have:
        return None
    got = threshold_rate([num(r["p"]) for r in have], [1 - float(level.iloc[0])] * len(have),
                         [int(num(r.get("n_look1")) if math.isfinite(num(r.get("n_look1")))
                              else num(r["n"])) for r in have],
                         [int(num(r.get("n_max")) if math.isfinite(num(r.get("n_max")))
                              else num(r["n"])) for r in have],
                         [num(r["sd_log"]) for r in have], draws=5000)
    return got if got.get("n") else None


def aa_check(aa: pd.DataFrame, machine: str, duets: pd.DataFrame | None = None) -> Check | None:
    """'A/A (TF <reference> against itself): <k> of <n> rows called different; <mode> <ratio>
    (tested interval <lo>–<hi>, <n> duets) <verdict>; ...; order bias <ratio - 1> (<mode>)',
    or None without rows."""
    part = aa[col(aa, "machine").map(text) == machine] if machine else aa
    rows = [r for r in records(part) if math.isfinite(num(r.get("ratio")))]
    if not rows:
        return None
    rows.sort(key=lambda r: (_modes(part).index(text(r.get("mode"))), text(r.get("keras"))))
    different = [r for r in rows if norm_code(r.get("verdict")) in (LEFT_FASTER, RIGHT_FASTER)]
    versions = sorted({text(r.get("left_framework_version")) for r in rows} - {""})
    who = f"TF {', '.join(versions)} against itself" if versions else "the reference against itself"
    parts = []
    for r in rows:
        code = norm_code(r.get("verdict"))
        word = ("called different, a false positive" if code in (LEFT_FASTER, RIGHT_FASTER)
                else "equivalent" if code == EQUIVALENT else "undecided")
        parts.append(f"{text(r.get('mode'))} {num(r.get('ratio')):.3f}x (tested interval "
                     f"{num(r.get('ratio_ci_low')):.3f}–{num(r.get('ratio_ci_high')):.3f}x, "
                     f"{int(num(r.get('n')))} duets) {word}")
    bias = ", ".join(f"{_pct(num(r.get('ratio')) - 1)} ({text(r.get('mode'))}, interval "
                     f"{_pct(num(r.get('ratio_ci_low')) - 1)} to "
                     f"{_pct(num(r.get('ratio_ci_high')) - 1)})" for r in rows)
    sentence = (f"A/A ({who}): {len(different)} of {len(rows)} row{'s' * (len(rows) != 1)} "
                f"called different; {'; '.join(parts)}. Order bias (the ratio's distance from "
                f"1, with its tested interval): {bias}.")
    at = _at_headline_level(rows, duets, machine)
    if at:
        sentence += (f" At the headline's own level ({at['threshold']:.3g}): {at['k']} of "
                     f"{at['n']} A/A p-values at or below it (a correct procedure: "
                     f"{at['expected']:.1%} a row; "
                     + ("more than it allows" if not at["ok"] else
                        f"with intervals {at['narrow']:g} times too narrow {at['rate_narrow']:.1%}"
                        f" a row, so {at['n']} rows can only fail grossly") + ").")
    return Check(machine, "aa", sentence, "warn" if different or (at and not at["ok"]) else "ok",
                 tuple(f"{machine}:{text(r.get('mode'))}:{text(r.get('keras'))}" for r in rows))


def rounds_check(rounds: pd.DataFrame, machine: str) -> Check | None:
    """'Health check of rounds: <mode>: <k> of <n> rounds moved, round <r> (<shift>, interval
    <lo> to <hi>), ...' or '<mode>: none of <n> rounds moved'; None without rounds."""
    part = rounds[col(rounds, "machine").map(text) == machine] if machine else rounds
    if part.empty or "moved" not in part.columns:
        return None
    moved_col = col(part, "moved").map(lambda v: text(v).lower() in ("true", "1"))
    per_mode = []
    for mode in _modes(part):
        mine = part[col(part, "mode").map(text) == mode]
        n = len(mine)
        moved = [r for r, m in zip(records(mine), moved_col[mine.index]) if m]
        if moved:
            what = ", ".join(f"round {int(num(r.get('round')))} "
                             f"({_pct(math.exp(num(r.get('shift'))) - 1)}, interval "
                             f"{_pct(math.exp(num(r.get('shift_ci_low'))) - 1)} to "
                             f"{_pct(math.exp(num(r.get('shift_ci_high'))) - 1)})"
                             for r in moved)
            per_mode.append(f"{mode}: {len(moved)} of {n} rounds moved, {what}")
        else:
            p = num(mine["p_round"].iloc[0]) if "p_round" in mine.columns else math.nan
            per_mode.append(f"{mode}: none of {n} rounds moved"
                            + (f" (F test of rounds p = {p:.2g})" if math.isfinite(p) else ""))
    sds = {mode: num(part[col(part, "mode").map(text) == mode]["sd_round"].iloc[0])
           for mode in _modes(part)} if "sd_round" in part.columns else {}
    if any(math.isfinite(v) for v in sds.values()):
        per_mode.append("the rounds' common effect, sd " + ", ".join(
            f"{v:.1%} ({mode})" for mode, v in sds.items() if math.isfinite(v)))
    total = int(moved_col.sum())
    sentence = "Health check of rounds: " + "; ".join(per_mode) + "."
    return Check(machine, "rounds", sentence, "warn" if total else "ok",
                 tuple(f"{machine}:{text(r.get('mode'))}:{int(num(r.get('round')))}"
                       for r in records(part)))


def looks_check(duets: pd.DataFrame, machine: str, alpha: float = 0.05) -> Check | None:
    """'Look 2 against look 1 (<k> rows given more duets): ... p = <p> ...', or None where no
    row had a second look or the table lacks the look-1 columns."""
    from driver.stats.sequential import looks_test

    need = {"look1_log_ratio", "look1_sd_log", "n_look1", "n", "log_ratio", "sd_log"}
    if duets is None or duets.empty or not need <= set(duets.columns):
        return None
    part = duets[col(duets, "machine").map(text) == machine] if machine else duets
    rows = [r for r in records(part) if num(r.get("n")) > num(r.get("n_look1")) >= 2
            and all(math.isfinite(num(r.get(c))) for c in need)]
    if not rows:
        return None
    level = 1 - num(rows[0].get("ci_level")) if math.isfinite(num(rows[0].get("ci_level"))) \
        else alpha
    got = looks_test([{"n1": int(num(r["n_look1"])), "m1": num(r["look1_log_ratio"]),
                       "s1": num(r["look1_sd_log"]), "n": int(num(r["n"])),
                       "m": num(r["log_ratio"]), "s": num(r["sd_log"])} for r in rows],
                     threshold=level)
    bad = got["p"] < alpha
    sentence = (f"Look 2 against look 1 ({got['rows']} rows given more duets): their second "
                f"look's duets {'DISAGREE with' if bad else 'agree with'} their first beyond "
                f"the rows' spread (sum of squared scores {got['Q']:.1f} on {got['df']} rows, "
                f"p = {got['p']:.2g} with the selection of open rows simulated; mean change "
                f"{_pct(math.exp(got['mean_shift']) - 1)})"
                + (": the two looks ran in different states of the machine, and these rows' "
                   "intervals mix them." if bad else "."))
    return Check(machine, "looks", sentence, "warn" if bad else "ok",
                 tuple(f"{machine}:{text(r.get('mode'))}:{text(r.get('env'))}" for r in rows))


def duet_checks(tabs: dict) -> list[dict]:
    """[{"machine", "checks": [Check]}] per machine with an A/A row or a health check; [] when
    the run's tables have neither (older runs)."""
    aa = tabs.get("duets_aa", pd.DataFrame())
    rounds = tabs.get("duet_rounds", pd.DataFrame())
    duets = tabs.get("duets", pd.DataFrame())
    keys = set()
    for df in (aa, rounds):
        if df is not None and not df.empty and "machine" in df.columns:
            keys |= {text(m) for m in df["machine"].dropna()}
    if not keys and any(df is not None and not df.empty for df in (aa, rounds)):
        keys = {""}
    out = []
    for machine in sorted(keys):
        found = [c for c in (aa_check(aa if aa is not None else pd.DataFrame(), machine, duets),
                             rounds_check(rounds if rounds is not None else pd.DataFrame(),
                                          machine),
                             looks_check(duets, machine)) if c]
        if found:
            out.append({"machine": machine, "checks": found})
    return out


def markdown(tabs: dict) -> list[str]:
    """RESULTS.md's lines ([] when the run has no such tables): one bullet per machine and
    check."""
    found = duet_checks(tabs)
    if not found:
        return []
    several = len(found) > 1
    kinds = {c.kind for m in found for c in m["checks"]}
    what = []
    if "aa" in kinds:
        what.append("A/A (`duets_aa`): the reference against itself, so a row called different "
                    "is a false positive and its ratio is the order bias.")
    if "looks" in kinds:
        what.append("Look 2 against look 1: the rows given more duets, their second look's "
                    "mean against their first beyond their spread (the selection of open rows "
                    "simulated).")
    if "rounds" in kinds:
        what.append("Health check (`duet_rounds`): a replicate round (numbered from 0) moved "
                    "when it shifted every row of a mode together (its shift: the round's ratios "
                    "against their rows' means), a state the duets did not cancel (of the "
                    "machine over the hour, or of a fork helper the rows share). It varies "
                    "between a row's replicates, so it is inside each row's interval; the rows "
                    "of a round share it (its sd: the rounds' common effect), and the cross-run "
                    "check replays that.")
    out = ["## The duets' own checks", "",
           "Not part of the answer: the duets checked on themselves, per machine. "
           + " ".join(what), ""]
    for m in found:
        for c in m["checks"]:
            out.append(f"- {'**' + m['machine'] + '**: ' if several and m['machine'] else ''}"
                       f"{c.text}")
    return out + [""]
