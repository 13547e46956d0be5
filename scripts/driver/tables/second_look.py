"""The second look within the study's one time budget (config `time_budget_min`).

After the first look (every paired row's first `duets.replicates` replicates: the headline's
duets, the A/A rows, the pairs in one process, the graph-vs-eager row), the checkpoint plan_duets
(scripts/plan_duets.py) knows what the study has spent and what its rows still need. The budget
covers the whole study after the env builds:

    available = time_budget_s - first look's duets - first rounds' cells (done, or reserved)

where the checkpoint runs after round 0's cells (rules/bench.smk: with a budget they are its
input), so they are counted as done and nothing is reserved. `cell_process_s`
(driver/study/budget.py), the machine's cost of a cell process that the plan records, is its
cells' median wall time; only where no cell has a wall time (every one failed or was not reached)
is it predicted from the duets' workers' import, build, first call and warm-up plus the sampling
window, which undercounts a fresh cell process. The extra rounds of
cells (driver/study/budget.py) get what the second look leaves.

A row still open after look 1 gets its second look (all `max_replicates` replicates, the design
the two-look levels of driver/stats/sequential.py are computed for) when it fits the seconds left,
in the study's order of priority (TIERS: the headline, the seed's other factors, the releases,
other frameworks) and within a tier in the order of its chance to be decided per second
(`decide_chance` over its cost): the rows closest to a decision per second first. The rows that do
not fit are not started; the plan lists them with the replicates and minutes that would give them
their second look, so that a run of the same study with a larger budget continues this one
(driver/tables/not_decided.py gives the command): finished duets and cells are kept, and the
checkpoint, given the same first look, chooses the same rows and then the ones this run left out.
"""
import math
from collections.abc import Iterable, Mapping

from scipy import stats as sps

from driver.stats.sequential import looks


def decide_chance(mean: float, sd: float, n1: int, n2: int, alpha: float, margin: float,
                  alpha_eq: float) -> float:
    """The chance that a row open after n1 replicates (mean and sd of its log ratios) is decided at
    look 2 with n2 replicates in all, if its true log ratio is `mean` and its spread `sd`: the
    final mean is then normal about `mean` with sd sd * sqrt(n2 - n1) / n2; the row is called
    equivalent when the final mean lies within the margin by the equivalence test's half-width,
    faster or slower when it lies beyond the difference test's half-width (equivalence first, as
    the verdicts are given), each half-width at look 2's nominal level of the two-look design."""
    if not (sd > 0 and n2 > n1 >= 2) or not math.isfinite(mean):
        return math.nan
    design = looks(n1, n2)
    se2 = sd / math.sqrt(n2)
    a_diff = float(sps.t.ppf(1 - float(design.nominal_two_sided(alpha)) / 2, n2 - 1)) * se2
    a_eq = float(sps.t.ppf(1 - float(design.nominal_one_sided(alpha_eq)), n2 - 1)) * se2
    tau = sd * math.sqrt(n2 - n1) / n2
    inside = math.log1p(margin) - a_eq  # |final| below this: equivalent

    def below(x):  # P(|final mean| < x)
        if x <= 0:
            return 0.0
        return float(sps.norm.cdf((x - mean) / tau) - sps.norm.cdf((-x - mean) / tau))

    return below(inside) + 1.0 - below(max(a_diff, inside))


def release_items(table, q: float = 0.05, min_effect: float = 0.10,
                  alpha_equivalence: float = 0.05) -> list[dict]:
    """The duets_releases rows still undecided after look 1, as items of the second look: the
    release between two headline rows is decided by more replicates of both, so its item names
    both rows (`sides`, [env, cell_id] each) and its chance to be decided if both get their
    second look (`decide_chance` of the derived row: its se at look 1 as the spread of one
    replicate, sqrt(n1) se; the half-widths at df n2 - 1, below the derived row's Welch df, so
    the chance is on the low side). `table`: the duets table at look 1 (all its rows, decided or
    not). The derived row is judged under the two-look design (duets_releases), so extending a
    row that look 1 decided costs it no size: its sequential p-value maps its last look's."""
    from driver.stats import verdicts
    from driver.tables.duets_releases import duets_releases_table

    if table is None or table.empty:
        return []
    releases = duets_releases_table(table, q=q, min_effect=min_effect,
                                    alpha_equivalence=alpha_equivalence)
    if releases.empty:
        return []
    ids = {(r.machine, r.env, r.mode, r.api, r.input, r.keras): (r.cell_id, int(r.n_max))
           for r in table.itertuples(index=False)}
    codes = [verdicts.norm_code(v) for v in releases["verdict"]]
    called = sum(c in (verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER) for c in codes)
    tested = int(releases["p"].notna().sum()) or 1
    out = []
    for row, code in zip(releases.itertuples(index=False), codes):
        if code != verdicts.UNDECIDED or not row.se_log == row.se_log:
            continue
        left = ids.get((row.machine, row.left_env, row.mode, row.api, row.input,
                        row.left_keras))
        right = ids.get((row.machine, row.right_env, row.mode, row.api, row.input,
                         row.right_keras))
        if left is None or right is None:
            continue
        n1 = int(min(row.left_n, row.right_n))
        n2 = max(left[1], right[1])
        chance = decide_chance(float(row.log_ratio), float(row.se_log) * math.sqrt(n1), n1, n2,
                               q * (called + 1) / tested, min_effect, alpha_equivalence)
        out.append({"family": "duets_releases", "env": row.left_env, "cell_id": left[0],
                    "against": row.right_env, "mode": row.mode, "n": n1, "n_max": n2,
                    "chance": chance, "sides": [[row.left_env, left[0]],
                                                [row.right_env, right[0]]]})
    return out


def choose_items(items: Iterable[Mapping], costs: Mapping[tuple, float], available_s: float,
                 taken: Iterable = ()) -> tuple[list[dict], list[dict], list[list[str]]]:
    """(chosen, not_reached, rows): greedy over items that each need the second look of one row
    or more (`sides`, [env, cell_id] each; a paired row's own item names itself, a derived
    release names its two rows): the item with the most chance per second of what it still
    costs (its sides not yet chosen, at `costs`) that fits what is left, again and again; an
    item whose sides are all chosen already costs nothing and comes free; an item without a
    chance figure comes after every item with one. `rows`: the rows that get their second look
    (sorted; with the rows of `taken`, those chosen before, which cost nothing here). With one
    side per item and no shared sides: the items in order of chance per second, each while it
    fits."""
    left = float(available_s)
    remaining = [dict(it) for it in items]
    taken = {tuple(k) for k in taken}
    chosen = []

    def cost(it):
        return sum(float(costs.get(tuple(s), 0.0)) for s in it["sides"]
                   if tuple(s) not in taken)

    def score(it, c):
        ch = it["chance"]
        if not ch == ch:
            return -math.inf
        return math.inf if c <= 0 else ch / c

    while remaining:
        fits = [(it, cost(it)) for it in remaining]
        fits = [(it, c) for it, c in fits if c <= left]
        if not fits:
            break
        best, c = min(fits, key=lambda x: (-score(*x), x[0]["env"], x[0]["cell_id"],
                                           x[0].get("against") or ""))
        remaining.remove(best)
        taken.update(tuple(s) for s in best["sides"])
        left -= c
        chosen.append(dict(best, cost_s=c))
    not_reached = [dict(it, cost_s=cost(it)) for it in remaining]
    return chosen, not_reached, sorted([list(k) for k in taken])


# The study's order of priority (issue "every verdict from a paired row"): the headline and its
# A/A rows, then the seed's other factors (the pairs in one process and their A/A rows, the
# graph-vs-eager row, the user's own models), then what each release changed, then other
# frameworks. A tier's items all come before the next tier's; within a tier, chance per second.
TIERS = {"duets": 0, "duets_aa": 0, "pairs": 1, "pairs_aa": 1, "duets_modes": 1,
         "duets_own": 1, "duets_releases": 2, "duets_frameworks": 3}


def tier(item: Mapping) -> int:
    """An item's place in the order of priority (TIERS; a family not named there comes last)."""
    return TIERS.get(str(item.get("family")), max(TIERS.values()) + 1)


def plan_second_look(rows: Iterable[Mapping], releases: Iterable[Mapping],
                     costs: Mapping[tuple, float],
                     available_s: float) -> tuple[list[dict], list[dict], list[list[str]]]:
    """The second look in the study's order of priority (TIERS): each tier's items
    (`choose_items`, closest to a decision per second first) with what the tiers before it left,
    a row already chosen costing nothing (a release whose two rows got their second look comes
    free). So an open headline row is never left out for a pair or a release that would have
    been closer to a decision per second: the headline's goals rest on its rows.
    (chosen, not_reached, rows)."""
    items = [dict(r, sides=r.get("sides") or [[r["env"], r["cell_id"]]]) for r in rows]
    items += [dict(r) for r in releases]
    left = float(available_s)
    chosen, not_reached, keys = [], [], []
    for level in sorted({tier(it) for it in items}):
        more, later, keys = choose_items([it for it in items if tier(it) == level], costs,
                                         left, taken=keys)
        left -= sum(float(c["cost_s"]) for c in more)
        chosen += more
        not_reached += later
    return chosen, not_reached, keys


def plan_items(records: list[dict], gap_s: float, level: float = 0.95, q: float = 0.05,
               min_effect: float = 0.10,
               alpha_equivalence: float = 0.05) -> tuple[list[dict], list[dict], dict]:
    """(rows, releases, costs) of a first look's duet records, for `plan_second_look`: the rows
    still open (every family; `duets.open_table`) with their chance and cost, the open releases
    (`release_items`), and the cost of every row's second look (the open rows', and the headline
    rows' a release needs, decided or not): its remaining replicates at its own duet time plus
    the job gap `gap_s`. Shared by the checkpoint plan_duets and scripts/replan.py."""
    from driver.tables.duets import duets_table, open_table

    rows = [{"env": r["env"], "cell_id": r["cell_id"], "family": r["family"], "n": int(r["n"]),
             "n_max": int(r["n_max"]),
             "chance": decide_chance(r["log_ratio"], r["sd_log"], int(r["n"]), int(r["n_max"]),
                                     r["alpha_next"], min_effect, alpha_equivalence),
             "cost_s": (int(r["n_max"]) - int(r["n"])) * (r["wall_s"] + gap_s)}
            for r in open_table(records, level=level, q=q, min_effect=min_effect,
                                alpha_equivalence=alpha_equivalence)]
    headline = duets_table(records, level=level, q=q, min_effect=min_effect,
                           alpha_equivalence=alpha_equivalence)
    costs = {(r["env"], r["cell_id"]): r["cost_s"] for r in rows}
    for r in headline.itertuples(index=False):
        costs.setdefault((r.env, r.cell_id),
                         max(0, int(r.n_max) - int(r.n)) * (r.wall_s + gap_s))
    releases = release_items(headline, q=q, min_effect=min_effect,
                             alpha_equivalence=alpha_equivalence)
    return rows, releases, costs


def reserve_rows(duets: Iterable[Mapping], reserve: Mapping, gap_s: float) -> list[dict]:
    """The rows whose second look is reserved before round 0 (`reserve`: round 0's order file's
    `reserve`: config duets.before_cells as the highest of TIERS it takes, with the study's q,
    level, min_effect and alpha_equivalence): each open row of those tiers after the first look
    `duets`, with its replicates in all (`n_max`) and one replicate's cost (its own duet time
    plus the job gap), as the checkpoint plan_duets plans them; `key` names the row's files
    (driver/study/budget.py `row_key`, which weighs them: `second_look_reserve_s`)."""
    from driver.study.budget import row_key
    from driver.tables.duets import row_id

    duets = list(duets)
    rows, _, _ = plan_items(
        duets, gap_s, level=float(reserve.get("level", 0.95)), q=float(reserve.get("q", 0.05)),
        min_effect=float(reserve.get("min_effect", 0.10)),
        alpha_equivalence=float(reserve.get("alpha_equivalence", 0.05)))
    keys = {(d["env"], row_id(d)): row_key(d) for d in duets}
    top = int(reserve.get("tier", -1))
    return [{"env": r["env"], "cell_id": r["cell_id"], "key": keys[(r["env"], r["cell_id"])],
             "n_max": int(r["n_max"]),
             "each_s": float(r["cost_s"]) / max(1, int(r["n_max"]) - int(r["n"]))}
            for r in rows if tier(r) <= top]
