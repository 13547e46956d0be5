"""Environments: the machines' and envs' facts as aggregation wrote them (driver/tables/facts.py)."""

ID, TITLE, ORDER = "environments", "Environments", 90


def build(data) -> dict:
    return data.study.get("environments") or {"envs": [], "machines": []}
