"""The report's sections, one module each, found by a loop: adding a section is one module here
and one template, nothing else.

A section module holds
    ID     the section's anchor (`<section id="...">`), also the context key its data sits under
           and the name of its template, `report/sections/_<ID>.html.j2`;
    TITLE  its name in the page's navigation;
    ORDER  a number: sections appear sorted by it (10 the answer, 20 which configuration, ...,
           100 the method; pick a free number between two neighbours);
    build(data) -> dict
           its data, from a `driver.report.data.ReportData` (the typed tables, cells, samples,
           facts, config). A section whose build raises shows the error in its place and the rest
           of the report renders (driver/report/render.py).

A module may set OPTIONAL = True: a section only some studies have, left out of the navigation
when its build returns nothing.

Its template receives the whole context, its own data as `<ID>` (and as `section`), and imports
the shared macros from `_macros.html.j2`. Skeleton of a new section, e.g. `changes.py`:

    ID, TITLE, ORDER = "changes", "What changed", 45

    def build(data):
        return {"rows": ...}

with `report/sections/_changes.html.j2`:

    {% from "_macros.html.j2" import table, section_error with context %}
    <section id="changes"><h2>What changed</h2>{{ section_error("changes") }}
    {% if changes %}...{% endif %}</section>
"""
import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """Every section module of this package, in ORDER."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for attr in ("ID", "TITLE", "ORDER", "build"):
            if not hasattr(mod, attr):
                raise AttributeError(f"report section module {mod.__name__} has no {attr}")
        found.append(mod)
    ids = [m.ID for m in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two report section modules share an ID: {sorted(ids)}")
    return sorted(found, key=lambda m: (m.ORDER, m.ID))


def template_name(section_id: str) -> str:
    """The template of a section, relative to report/."""
    return f"sections/_{section_id}.html.j2"
