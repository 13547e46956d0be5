"""Which configuration to use: per task (training, inference), model and data the rules merged
across versions with the line of code that selects each mode, the filterable versions table,
this machine's one-factor rules, and the source study's DO / DON'T and claims checked here."""
from driver.report import guidance as rules_of
from driver.report import source_claims as seedcheck
from driver.report import views
from driver.report.claims import claims

ID, TITLE, ORDER = "guidance", "Which configuration", 20


def build(data) -> dict:
    blocks = rules_of.rules(data.table("guidance"), data.cells)
    return {"blocks": blocks, "switch": rules_of.switch_lines(blocks),
            "seed": seedcheck.seed_checks(data.tabs, data.cells),
            "rules": seedcheck.machine_rules(data.tabs),
            "claims": claims(data.tabs, data.cells),
            "versions": views.versions_view(data.table("versions"), data.order)}
