"""What changed: per release, the configurations it made faster or slower than the version
before it and by how much (adjacent_releases), the same for the headline's configuration from
its duets (duets_releases: each TF 2.x version against the one before, the reference cancelling,
counted per mode in one sentence built from the rows), the change points along each
configuration's versions (changepoints), and the source study's release claims judged on them. A
release new in this study (an env file added and run after the rest) comes first, right after
the answer."""
from driver.report import release_claims, releases
from driver.report.fmt import cell, records, text, version_key
from driver.report.sections.duets import ratio_cells
from driver.report.sections.pairs import summary
from driver.stats import verdicts
from driver.tables.ordering import AXIS_ORDER

ID, TITLE, ORDER = "changes", "What changed", 15

DUET_COLUMNS = (("mode", False), ("later", False), ("earlier", False),
                ("Keras, later / earlier", False), ("later / earlier", True),
                ("tested interval", True), ("equivalence interval", True), ("verdict", False),
                ("duets, later / earlier", True))


def duets_view(df) -> dict:
    """The duets_releases rows: per machine and mode the counts of one sentence (summary:
    `faster` is the later release faster), and the rows as the macro table lays them out, mode by
    mode, newest first (a machine column where the rows hold several machines)."""
    rows = sorted(records(df), key=lambda r: (
        text(r.get("machine")), AXIS_ORDER["mode"].get(text(r.get("mode")), 99),
        tuple(-x for x in version_key(text(r.get("left_framework_version"))))))
    machines = list(dict.fromkeys(text(r.get("machine")) for r in rows))
    groups = []
    for key in dict.fromkeys((text(r.get("machine")), text(r.get("mode"))) for r in rows):
        part = [r for r in rows if (text(r.get("machine")), text(r.get("mode"))) == key]
        label = f"{key[1].capitalize()} mode" if len(machines) == 1 else f"{key[0]}, {key[1]} mode"
        groups.append({"label": label, **summary(part)})
    columns = [("machine", False)] * (len(machines) > 1) + list(DUET_COLUMNS)
    out = []
    for r in rows:
        verdict = text(r.get("verdict"))
        out.append([cell(text(r.get("machine")))] * (len(machines) > 1) + [
            cell(text(r.get("mode"))), cell(text(r.get("left_framework_version"))),
            cell(text(r.get("right_framework_version"))),
            cell(f"{text(r.get('left_keras'))} / {text(r.get('right_keras'))}"),
            *ratio_cells(r),
            cell(verdicts.verdict_word(verdict, "later"), cls=verdicts.words(verdict).cls),
            cell(f"{text(r.get('left_n'))} / {text(r.get('right_n'))}")])
    return {"n": len(rows), "groups": groups, "machines": len(machines),
            "table": {"id": "duets-releases",
                      "columns": [{"label": c, "num": n} for c, n in columns], "rows": out}}


def build(data) -> dict:
    adjacent = data.table("adjacent_releases")
    new = releases.new_envs(data.cells)
    duets = data.table("duets_releases")
    groups = releases.release_groups(adjacent, data.order, new, duets)
    return {
        "new": [g for g in groups if g["new"]],
        "releases": [g for g in groups if not g["new"]],
        "lines": releases.lines_summary(adjacent),
        "n_rows": len(adjacent),
        "duets": duets_view(duets),
        "reference_env": data.reference_env,
        "changepoints": releases.changepoint_view(data.table("changepoints"), data.order,
                                                  duets),
        "claims": release_claims.release_claims(data.tabs, data.machine_facts),
        "min_effect": data.min_effect,
    }
