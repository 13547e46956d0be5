"""No run-dependent figure or date is typed into a document that lasts: README.md, the config.yaml
header (its opening comment block) and the docstrings of scripts/**/*.py (module, class, function).
A figure that depends on a run is generated from that run (docs/RESULTS.md, by `make publish`) or
written in a dated run note (docs/runs/).

A second, narrower check covers every lasting document: README.md, CHANGELOG.md, every comment of
config.yaml and docs/**/*.md (not docs/runs/, where measured figures belong, nor the RESULTS.md and
PROVENANCE.md pages that `make publish` generates from a run, current or archived). There, a
typed duration ("62 min", "34 minutes", "1 h", "about an hour"), a count of processes, cells,
pairs or tests typed as a run's result ("400 processes", "312 passed") or a measured statistic
typed as a bare decimal ("sd 0.08", "median 0.53") fails the test, unless
DOC_ALLOWED lists it as spec with the reason.

The patterns are what measurement diaries look like: dates (2026-11-25), durations ("83 min 27 s"),
decimal seconds or percentages ("10.8 s", "93.8 %"), ratios ("1.31-3.58x"), measured statistics
("median 0.53"), counts of a run ("400 processes"), machine sizes ("2-core") and commit hashes.
A docstring figure that is an example or a design constant, not a measurement, is listed in
ALLOWED with the reason; the README and the config header have no exceptions."""
import ast
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

NUM = r"(?<![\w.])\d+\.\d+(?!\d|\.\d)"  # a decimal number, not part of a version (2.13.0)
PATTERNS = {
    "date": r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b",
    "duration": r"\b\d+\s*(?:h|min)\s+\d+(?:\.\d+)?\s*(?:min|s)\b",
    "decimal time": NUM + r"\s*(?:s|ms|µs|us|ns)\b",
    "decimal percent": NUM + r"\s*%",
    "ratio": NUM + r"(?:\s*[-–]\s*" + NUM + r")?x\b",
    "arrow": NUM + r"\s*(?:s|ms|%)?\s*(?:->|→)\s*" + NUM,
    "statistic": r"\b(?:median|mean|sd|share|p90|p95|percentile|lag-1)\s+(?:of\s+)?" + NUM,
    "run count": r"\b\d{2,}\s+(?:ok\s+)?(?:cells|processes|cell processes|tests|pairs|comparisons)\b",
    "machine size": r"\b\d+-core\b",
    "commit": r"\bcommit\s+[0-9a-f]{7,40}\b",
}

# The lasting documents' check: durations and run counts only (a document may well state a design
# constant in seconds or a percentage; an hour or a count of processes is what a run note holds).
DOC_PATTERNS = {
    "duration": r"(?<![\w.])\d+(?:\.\d+)?(?:\s*(?:-|–|to)\s*\d+(?:\.\d+)?)?\s*"
                r"(?:min|mins|minutes?|h|hrs?|hours?)\b",
    "hour": r"\b(?:an|its|one|half an|a full)\s+hour\b",
    # a measured spread or level typed as a bare decimal ("sd 0.08", "median 0.53")
    "statistic": r"\b(?:median|mean|sd|p90|p95|lag-1)\s+(?:of\s+)?" + NUM
                 + r"(?:\s*[-–]\s*" + NUM + r")?",
    "run count": r"(?<![\w.])\d{2,}\s+(?:ok\s+|failed\s+|twin\s+)?(?:cells|processes|cell processes|tests|"
                 r"pairs|comparisons|passed)\b",
}
# (file, the matched text) -> why it is spec, not a run's figure. Keep it short; prefer rewording.
DOC_ALLOWED = {
    ("config.yaml", "24 pairs"): "the default design's twin count (config `twins`)",
    ("docs/design.md", "24 pairs"): "the default design's twin count (config `twins`)",
    ("docs/releases.md", "30 minutes"): "when an env counts as new (driver/report/releases.py)",
}

# (file, the matched text) -> why it is not a run's figure. Keep it short; prefer rewording.
ALLOWED = {
    ("scripts/tfspeed/machine.py", "0.5 s"): "worked example of the tick arithmetic",
    ("scripts/driver/stats/drift.py", "0.3 %"): "the effect size the rule is built to ignore",
    ("scripts/tfspeed/stats.py", "0.3 %"): "the effect size the rule is built to ignore",
}


def run_figures(text: str) -> list[tuple[str, str]]:
    """(pattern name, matched text) for every run-dependent-looking figure in text. A link's
    target is not read: linking a dated run note is how a figure is cited."""
    text = re.sub(r"\]\([^)\s]*\)", "]()", text)
    return [(name, m.group(0)) for name, pattern in PATTERNS.items()
            for m in re.finditer(pattern, text)]


def config_header(text: str) -> str:
    """The opening comment block of config.yaml (up to the first line that is not a comment)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


def unquoted(doc: str) -> str:
    """A docstring without its quoted examples ('1.2x slower', "TF 2.16-2.21, 1.00-1.04x"): a
    format shown by example is not a measurement."""
    return re.sub(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"]{0,200}\"", "", doc)


def docstrings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", "module"), doc


# What the checker must catch: the figures this project once typed into lasting text.
ONCE_TYPED = [
    "uv does not, and every cell process would compile TensorFlow's 5,000 modules again: 10.8 s "
    "against 4.7 s to import TF 2.21 on a 2-core VM",
    "Successive step times are autocorrelated (lag-1 median 0.53 here: clocks, caches)",
    "# The CPU default is sized for under an hour on a 2-core machine: 125 cells x 4 processes, "
    "4 twins,\n# up to 120 s of extra processes (516 cell processes planned; 4-9 s each",
    "run on 2026-11-25 on a 2-core AMD EPYC VM with no GPU: 129 cells (125 + 4 twins) in 27 envs, "
    "400 processes, in 83 min 27 s",
    "TF 2.x is slower than TF 1.14 in 21 of 22 versions (1.31-3.58x its step time)",
    "verdicts agree 93.8 % of 257 comparisons; import of TF 2.21 10.8 s -> 4.7 s",
    "(2-core Xeon VM, 2026-11-23, commit 825b0c1, 400 ok processes)",
    "[the run of 2026-11-25](docs/runs/x.md) took 50 min 44 s",
]
# What it must leave alone: the kind of text the README and docstrings need.
CLEAN = [
    "make study needs Python >= 3.11; TF <= 2.2 needs 3.7; tensorflow-cpu==2.19.0 and tf-keras==2.19.0",
    "the ratio's CI within 1 +- `min_effect`; the supervisor polls once a second; `budget_s` seconds",
    "torch==2.13.0 installs as 2.13.0+cpu; Keras 3.15.1 on JAX 0.10.2; TF 2.14 and later",
    "every TF minor from 1.14 to 2.21; 5 processes per cell; docs/runs/ has the measured costs",
    "[measured](docs/runs/2026-11-25-amd-epyc-2c-default-run1.md): a link to a dated run note",
]


@pytest.mark.parametrize("text", ONCE_TYPED)
def test_checker_catches_the_figures_once_typed(text):
    assert run_figures(text), text


@pytest.mark.parametrize("text", CLEAN)
def test_checker_leaves_ordinary_text_alone(text):
    assert run_figures(text) == []


def test_quoted_examples_in_a_docstring_are_not_figures():
    doc = "A ratio as one convention: '1.2x slower (+20 %)'; the module's \"0.89x\" too."
    assert run_figures(unquoted(doc)) == [] and run_figures(doc)
    assert run_figures(unquoted("it's 10.8 s here, the model's step")) == [("decimal time", "10.8 s")]


def test_every_pattern_catches_a_figure_once_typed():
    kinds = {name for text in ONCE_TYPED for name, _ in run_figures(text)}
    assert kinds == set(PATTERNS)


def test_readme_has_no_run_figures():
    """Outside the answer block, which `make republish` writes from the published tables
    (test_answer_consistency.py checks it against them)."""
    from test_no_typed_figures import outside_markers

    found = run_figures(outside_markers((REPO / "README.md").read_text(encoding="utf-8")))
    assert not found, "README.md types run figures (put them in docs/runs/ or generate them): %s" % found


def test_config_header_has_no_run_figures():
    found = run_figures(config_header((REPO / "config.yaml").read_text(encoding="utf-8")))
    assert not found, "config.yaml's header types run figures: %s" % found


def test_docstrings_have_no_run_figures():
    found, used = [], set()
    for path in sorted((REPO / "scripts").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for name, doc in docstrings(path):
            for kind, text in run_figures(unquoted(doc)):
                if (rel, text) in ALLOWED:
                    used.add((rel, text))
                    continue
                found.append("%s (%s): %s %r" % (rel, name, kind, text))
    assert not found, "docstrings type run figures:\n" + "\n".join(found)
    stale = {k for k in set(ALLOWED) - used if (REPO / k[0]).exists()}
    assert not stale, "ALLOWED entries that match nothing any more: %s" % stale


def doc_figures(text: str) -> list[tuple[str, str]]:
    """(pattern name, matched text) for every typed duration or run count in a lasting document;
    a link's target is not read (a dated run note is cited by linking it)."""
    text = re.sub(r"\]\([^)\s]*\)", "]()", text)
    return [(name, m.group(0)) for name, pattern in DOC_PATTERNS.items()
            for m in re.finditer(pattern, text, re.I)]


def config_comments(text: str) -> str:
    """Every comment of config.yaml (the part of each line after its '#'), values left out."""
    return "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)


# What `make publish` writes from a run's tables (docs/RESULTS.md, docs/PROVENANCE.md, and their
# archived copies): a run's figures, generated, never typed.
GENERATED_FROM_A_RUN = {"RESULTS.md", "PROVENANCE.md"}


def lasting_documents(root: Path) -> dict[str, str]:
    """relative path -> the text the check reads: README.md, CHANGELOG.md, config.yaml's comments,
    docs/**/*.md except the run notes and the pages generated from a run."""
    docs = {}
    for name in ("README.md", "CHANGELOG.md"):
        if (root / name).exists():
            docs[name] = (root / name).read_text(encoding="utf-8")
    if (root / "config.yaml").exists():
        docs["config.yaml"] = config_comments((root / "config.yaml").read_text(encoding="utf-8"))
    for path in sorted((root / "docs").rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("docs/runs/") or path.name in GENERATED_FROM_A_RUN:
            continue
        docs[rel] = path.read_text(encoding="utf-8")
    return docs


def typed_figures(root: Path) -> tuple[list[str], set]:
    """(the figures found outside DOC_ALLOWED, the DOC_ALLOWED entries used)."""
    found, used = [], set()
    for rel, text in lasting_documents(root).items():
        for kind, figure in doc_figures(text):
            if (rel, figure) in DOC_ALLOWED:
                used.add((rel, figure))
            else:
                found.append("%s: %s %r" % (rel, kind, figure))
    return found, used


TYPED = ["the default study took 62 min", "inside its hour", "about an hour on a small machine",
         "took 34 minutes", "1 h on a GPU", "58-64 min", "400 processes, 129 cells", "312 passed",
         "2 hours", "an hour", "between-process sd 0.13-0.16", "sd 0.08 between processes"]
SPEC = ["every 10 s", "budget_s: 120", "4 processes per cell", "1 +- min_effect", "TF 2.14 and later",
        "the hour of the day", "50 ms polling", "[run note](docs/runs/2026-11-26-x-62-min.md)",
        "8 cells", "`time_budget_min` minutes", "TF 2.x vs TF 1.14 pairs"]


@pytest.mark.parametrize("text", TYPED)
def test_document_check_catches_typed_durations_and_counts(text):
    assert doc_figures(text), text


@pytest.mark.parametrize("text", SPEC)
def test_document_check_leaves_spec_alone(text):
    assert doc_figures(text) == [], text


def test_lasting_documents_type_no_durations_or_run_counts():
    found, used = typed_figures(REPO)
    assert not found, ("lasting documents type durations or run counts (link a dated run note in "
                       "docs/runs/ instead, or list spec in DOC_ALLOWED):\n" + "\n".join(found))
    stale = set(DOC_ALLOWED) - used
    assert not stale, "DOC_ALLOWED entries that match nothing any more: %s" % stale


def test_a_planted_duration_fails_the_check(tmp_path):
    """The check can fail: a copy of the lasting documents with figures planted in each kind of
    file is caught, file by file; the same figure in a run note is not."""
    for name in ("README.md", "CHANGELOG.md", "config.yaml"):
        (tmp_path / name).write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    shutil.copytree(REPO / "docs", tmp_path / "docs",
                    ignore=lambda folder, names: [n for n in names if not n.endswith(".md")
                                                  and not (Path(folder) / n).is_dir()])
    before = typed_figures(tmp_path)[0]
    plants = {"README.md": "The default study takes 62 min here.\n",
              "CHANGELOG.md": "- the suite now runs in 34 minutes\n",
              "config.yaml": "# sized for 1 h on a laptop\ntwins: 24\n",
              "docs/METHOD.md": "It finishes in about an hour with 400 processes.\n",
              "docs/runs/README.md": "took 62 min (a run note may say so)\n"}
    for rel, line in plants.items():
        with open(tmp_path / rel, "a", encoding="utf-8") as handle:
            handle.write(line)
    found = list((Counter(typed_figures(tmp_path)[0]) - Counter(before)).elements())
    assert sorted(found) == sorted([
        "README.md: duration '62 min'", "CHANGELOG.md: duration '34 minutes'",
        "config.yaml: duration '1 h'", "docs/METHOD.md: hour 'an hour'",
        "docs/METHOD.md: run count '400 processes'"]), found
