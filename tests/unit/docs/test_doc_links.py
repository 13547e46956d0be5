"""The docs hold together: every relative link in README.md, CHANGELOG.md and docs/**/*.md points
to a file that exists, and every page under docs/ can be reached from the README by following
links (the README is where a user starts)."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


def links(page: Path) -> list[tuple[str, Path]]:
    """(link text as written, the file it points to) for every relative link outside code."""
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if path.is_dir():
            path = path / "README.md" if (path / "README.md").exists() else path
        out.append((target, path))
    return out


def test_every_relative_link_resolves():
    broken = ["%s -> %s" % (page.relative_to(REPO), target)
              for page in pages() for target, path in links(page) if not path.exists()]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_page_is_reached_from_the_readme():
    seen, todo = set(), [REPO / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo += [path for _, path in links(page)]
    missing = [str(p.relative_to(REPO)) for p in pages() if p not in seen]
    assert not missing, "pages no link from the README reaches: %s" % missing


def test_the_checks_can_fail(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "README.md").write_text("see [a](docs/a.md) and `[not a link](x.md)`\n"
                                        "```\n[in code](nowhere.md)\n```\n")
    (tmp_path / "CHANGELOG.md").write_text("")
    (docs / "a.md").write_text("[gone](missing.md) [web](https://example.org) [here](#top)\n")
    (docs / "orphan.md").write_text("no one links here\n")
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    assert [t for t, p in links(tmp_path / "README.md")] == ["docs/a.md"]
    try:
        test_every_relative_link_resolves()
    except AssertionError as exc:
        assert "missing.md" in str(exc) and "nowhere" not in str(exc)
    else:
        raise AssertionError("a broken link passed")
    try:
        test_every_page_is_reached_from_the_readme()
    except AssertionError as exc:
        assert "orphan.md" in str(exc) and "a.md'" not in str(exc).replace("orphan.md", "")
    else:
        raise AssertionError("an orphan page passed")
