"""No figure a run measured is typed by hand outside the dated run notes: any number with a unit
or a % ("12 %", "0.5 s", "1.59x", "2 GB", "0.15 of a core") in README.md, docs/*.md (not
docs/runs/, where measured figures belong), config.yaml, profiles/ and CHANGELOG.md fails this
test, unless it sits inside a block that `make republish` writes between markers (README's
answer) or SPEC lists it as a design constant (a config default, a test's planted figure, a
worked example), with the reason. A figure of a run is cited by linking its run note. A figure
split over two lines ("about 0.1" / "core") is found too.

Generated pages are not read: docs/RESULTS.md and docs/PROVENANCE.md are written from the
published runs by `make republish`, docs/ARCHITECTURE.md from the module docstrings (whose
figures test_no_run_figures.py checks)."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
GENERATED_PAGES = {"RESULTS.md", "PROVENANCE.md", "ARCHITECTURE.md"}
MARKERS = [(re.escape("<!-- answer: written by make republish"), re.escape("<!-- /answer -->"))]

UNIT = (r"(?<![\w.])[-+±]?\d+(?:[.,]\d+)?(?:\s*(?:-|–|to)\s*\d+(?:[.,]\d+)?)?\s*"
        r"(?:%|x\b|×|ms\b|s\b|µs\b|us\b|ns\b|sec(?:onds?)?\b|min(?:utes?)?\b|h\b|hours?\b|"
        r"hrs?\b|days?\b|GB\b|GiB\b|MB\b|MiB\b|KB\b|kB\b|TB\b|cores?\b|of a core\b|CPUs?\b|"
        r"Hz\b|MHz\b|GHz\b)")

# (file, the matched text) -> why it is a design constant, not a run's figure. Prefer rewording.
SPEC = {
    ("CHANGELOG.md", "90 %"): "the TOST interval's level, 1 - 2 equivalence_alpha",
    ("CHANGELOG.md", "50 ms"): "Popen.wait's polling interval (CPython)",
    ("CHANGELOG.md", "10 s"): "the supervisor's memory-scan bound (code constant)",
    ("CHANGELOG.md", "120 s"): "the allocation budget default of that release (config)",
    ("CHANGELOG.md", "0.5 s"): "the sampling window default (config)",
    ("CHANGELOG.md", "2 GB"): "the probe's former SLURM job size (profile)",
    ("config.yaml", "10 %"): "the worked example of a ratio (0.10 = 10 %)",
    ("config.yaml", "10 ms"): "a clock tick at 100 Hz (the kernel's USER_HZ)",
    ("config.yaml", "10-100x"): "the source study's quoted warning",
    ("config.yaml", "1000 x"): "the matmul's size (1000 x 1000), a design constant",
    ("docs/METHOD.md", "0.2 s"): "the warm-up block length (code constant)",
    ("docs/METHOD.md", "2 %"): "the warm-up stability rule (code constant)",
    ("docs/METHOD.md", "1 %"): "the stopping rule's precision (config stop)",
    ("docs/METHOD.md", "5 %"): "the drift rule and an effect-size class boundary (code constants)",
    ("docs/METHOD.md", "2 CPU"): "the source study's words (\"TF 2 CPU prediction\")",
    ("docs/METHOD.md", "10 %"): "a planted effect in a unit test",
    ("docs/METHOD.md", "80 %"): "the power the dimensioning aims at (design)",
    ("docs/METHOD.md", "1.6x"): "a planted miscalibration in a unit test",
    ("docs/METHOD.md", "2.2x"): "a planted miscalibration in a unit test",
    ("docs/METHOD.md", "5-20 %"): "an effect-size class (code constant)",
    ("docs/METHOD.md", "20 %"): "an effect-size class boundary (code constant)",
    ("docs/METHOD.md", "99 %"): "the level Benjamini-Hochberg over TOST p-values asks (design)",
    ("docs/METHOD.md", "95 %"): "the nominal level of the simultaneous bounds",
    ("docs/METHOD.md", "1000 x"): "the matmul's size, a design constant",
    ("docs/design.md", "10 %"): "the margin's default (config min_effect)",
    ("docs/design.md", "14 %"): "the binomial upper bound of 0 of 24 twins (arithmetic)",
    ("docs/machines.md", "99 %"): "the probe test's level (design)",
    ("docs/machines.md", "10 %"): "probe.min_change's default (config)",
    ("docs/machines.md", "2 %"): "a unit test's bound on a planted case",
    ("docs/machines.md", "30 %"): "a unit test's planted drift",
    ("docs/machines.md", "10 ms"): "a clock tick at 100 Hz (the kernel's USER_HZ)",
    ("docs/machines.md", "100 Hz"): "the kernel's USER_HZ",
    ("docs/machines.md", "0.5 s"): "the worked example's window (config)",
    ("docs/machines.md", "2 CPUs"): "the worked example's machine",
    ("docs/machines.md", "3 %"): "a unit test's bound on a planted case",
    ("docs/machines.md", "5 %"): "a unit test's bound on a planted case",
    ("docs/releases.md", "5 %"): "the change-point test's false-alarm level (design)",
    ("docs/releases.md", "95 %"): "the change-point interval's level (design)",
    ("docs/releases.md", "1.25x"): "the source claim's threshold (driver/report/release_claims.py)",
    ("docs/releases.md", "30 minutes"): "when an env counts as new (driver/report/releases.py)",
    ("docs/selfbench.md", "80 %"): "mde_80's power (its definition)",
    ("profiles/default/config.yaml", "1s"): "Snakemake's default rate limit (100/1s)",
    ("profiles/default/config.yaml", "10s"): "the rate limit this profile sets",
    ("profiles/default/config.yaml", "10 s"): "the rate limit this profile sets, in words",
    ("profiles/slurm/config.yaml", "1s"): "Snakemake's default rate limit (100/1s)",
    ("profiles/slurm/config.yaml", "10s"): "the rate limit this profile sets",
    ("profiles/slurm/config.yaml", "10 s"): "the rate limit this profile sets, in words",
    ("CHANGELOG.md", "10s"): "the profiles' rate limit (profiles/*/config.yaml)",
    ("CHANGELOG.md", "60s"): "the profiles' former rate limit",
    ("profiles/slurm/config.yaml", "3x"): "slurmctld's MinJobAge rule (the plugin's docs)",
    ("profiles/slurm/config.yaml", "40 s"): "the plugin's first status-check delay default",
    ("profiles/slurm/config.yaml", "900 s"): "cell_timeout_s's default (config)",
    ("profiles/slurm/config.yaml", "2 GB"): "a one-CPU job's size in the example",
}


def FILES() -> list[Path]:
    docs = [p for p in sorted((REPO / "docs").glob("*.md")) if p.name not in GENERATED_PAGES]
    profiles = [p for p in sorted((REPO / "profiles").rglob("*")) if p.is_file()]
    return [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "config.yaml", *docs, *profiles]


def outside_markers(text: str) -> str:
    """text with every generated block (markers included) blanked, line numbers kept."""
    for begin, end in MARKERS:
        text = re.sub(begin + r".*?" + end, lambda m: "\n" * m.group(0).count("\n"), text,
                      flags=re.S)
    return text


def typed_figures(path: Path) -> list[tuple[int, str]]:
    """(line, matched text) for every number with a unit or % outside generated blocks; a
    link's target is not read (linking a run note is how a figure is cited)."""
    text = outside_markers(path.read_text(encoding="utf-8"))
    text = re.sub(r"\]\([^)\s]*\)", lambda m: "]()" + " " * (len(m.group(0)) - 3), text)
    # a line break (and a comment's '#' after it) read as a space, offsets kept: a figure split
    # over two lines ("about 0.1" / "core") is found on the line where it starts
    flat = re.sub(r"\n#?", lambda m: " " * len(m.group(0)), text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(0).strip())
            for m in re.finditer(UNIT, flat)]


@pytest.mark.parametrize("path", FILES(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_typed_run_figure(path):
    rel = str(path.relative_to(REPO))
    bad = [f"{rel}:{line}: {m!r}" for line, m in typed_figures(path) if (rel, m) not in SPEC]
    assert not bad, ("figures typed by hand (link a dated run note, say the config key, or, for a "
                     "design constant, list it in SPEC with the reason):\n" + "\n".join(bad))


def test_the_scan_catches_what_it_should(tmp_path):
    """The scan is able to fail: planted figures of every kind are found, a generated block and
    a link target are not read."""
    doc = tmp_path / "x.md"
    doc.write_text("slower in 21 of 22 versions (1.39-4.18x), 3 % slower, 0.15 of a core, 62 min,"
                   " 24 GB, about 0.1\ncore\n<!-- answer: written by make republish from docs/tables;"
                   " do not edit -->\n1.59x inside\n<!-- /answer -->\n[note](runs/2026-11-26-24GB.md)\n")
    found = [m for _, m in typed_figures(doc)]
    assert found == ["1.39-4.18x", "3 %", "0.15 of a core", "62 min", "24 GB", "0.1 core"], found


def test_spec_entries_are_used():
    """An allowance whose figure is gone is removed, so SPEC does not grow stale."""
    seen = {(str(p.relative_to(REPO)), m) for p in FILES() for _, m in typed_figures(p)}
    assert not set(SPEC) - seen, sorted(set(SPEC) - seen)
