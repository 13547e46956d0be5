"""Which configuration to use: the DO / DON'T lists per model and data, this machine's rules, the
source study's DO / DON'T and claims checked here, and the filterable versions table."""
from driver.report import source_claims as seedcheck
from driver.report import views
from driver.report.claims import claims, guidance_view

ID, TITLE, ORDER = "guidance", "Which configuration", 20


def build(data) -> dict:
    return {"seed": seedcheck.seed_checks(data.tabs, data.cells),
            "rules": seedcheck.machine_rules(data.tabs),
            "claims": claims(data.tabs, data.cells),
            "guidance": guidance_view(data.table("guidance")),
            "versions": views.versions_view(data.table("versions"), data.order)}
