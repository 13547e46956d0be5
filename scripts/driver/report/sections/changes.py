"""What changed: per release, the configurations it made faster or slower than the version
before it and by how much (adjacent_releases), the change points along each configuration's
versions (changepoints), and the source study's release claims judged on them. A release new in
this study (an env file added and run after the rest) comes first, right after the answer."""
from driver.report import release_claims, releases

ID, TITLE, ORDER = "changes", "What changed", 15


def build(data) -> dict:
    adjacent = data.table("adjacent_releases")
    new = releases.new_envs(data.cells)
    groups = releases.release_groups(adjacent, data.order, new)
    return {
        "new": [g for g in groups if g["new"]],
        "releases": [g for g in groups if not g["new"]],
        "lines": releases.lines_summary(adjacent),
        "n_rows": len(adjacent),
        "changepoints": releases.changepoint_view(data.table("changepoints"), data.order),
        "claims": release_claims.release_claims(data.tabs),
        "min_effect": data.min_effect,
    }
