"""Matplotlib's SVG made page-ready, as text: compacted (short paths, rounded geometry, shared
styles as classes), ids unique in the page (each tagged by the figure's own hash), named for
assistive technology, and the size budget a figure must keep. driver/report/figures.py renders
every figure through clean_svg."""
import hashlib
import html
import re


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


# Ids the browser tests select by prefix (tests/browser/test_report_screen.py: TICKS) keep their
# group ids, tagged; any other id survives only where the SVG refers to it.
KEPT_ID_PREFIXES = ("axes_", "xtick_", "ytick_")
# The most bytes one inline figure may take (an SVG as clean_svg returns it); a figure over it is
# a figure to fold, thin or drop (tests/unit/report/test_figures.py checks the report's figures).
FIGURE_BUDGET_BYTES = 80_000
_NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")
_GEOMETRY = re.compile(r'\b(d|x|y|x1|x2|y1|y2|cx|cy|r|width|height|viewBox|transform|points)="([^"]*)"')
_FONTS = re.compile(r"font-family: 'DejaVu Sans', [^;\"]*sans-serif(; )?")


_PATH_TOKEN = re.compile(r"[MLCQZz]|-?\d+(?:\.\d+)?(?:e-?\d+)?")


def short_path(d: str) -> str:
    """An SVG path's `d` in fewer characters, the same shape: no spaces around commands, and a
    line to a point straight above or beside the current one as V or H (matplotlib writes
    absolute M, L, C, Q and z only; anything else is returned as it came)."""
    tokens = _PATH_TOKEN.findall(d)
    if "".join(tokens) != re.sub(r"[\s,]+", "", d):
        return d
    out, i, cur, start = [], 0, ("", ""), ("", "")
    arity = {"M": 2, "L": 2, "C": 6, "Q": 4}
    while i < len(tokens):
        cmd = tokens[i]
        i += 1
        if cmd in "Zz":
            out.append("z")
            cur = start
            continue
        n = arity.get(cmd)
        if n is None or i + n > len(tokens):
            return d
        args = tokens[i:i + n]
        i += n
        if cmd == "L" and args[0] == cur[0]:
            out.append("V" + args[1])
        elif cmd == "L" and args[1] == cur[1]:
            out.append("H" + args[0])
        else:
            out.append(cmd + " ".join(args).replace(" -", "-"))
        cur = (args[-2], args[-1])
        if cmd == "M":
            start = cur
    return "".join(out)


def figures_over_budget(page: str, budget: int = FIGURE_BUDGET_BYTES) -> list[tuple[str, int]]:
    """(aria-label, bytes) of every inline SVG in `page` over `budget` bytes (UTF-8)."""
    out = []
    for m in re.finditer(r"<svg\b.*?</svg>", page, flags=re.S):
        size = len(m.group(0).encode("utf-8"))
        if size > budget:
            label = re.search(r'aria-label="([^"]*)"', m.group(0))
            out.append((html.unescape(label.group(1)) if label else "", size))
    return out


def _round(match) -> str:
    value = f"{float(match.group(0)):.1f}".rstrip("0").rstrip(".")
    return "0" if value == "-0" else value


def compact_svg(svg: str) -> str:
    """Matplotlib's SVG, the same drawing in fewer bytes: coordinates to 0.1 pt (0.13 px), short
    paths (short_path), no indentation, no no-op rotations, no font list on every text
    (report/figures.css sets the same one for `svg.fig text`), and a style used three times or
    more as a class (_style_classes)."""
    svg = _GEOMETRY.sub(lambda m: f'{m.group(1)}="'
                        + re.sub(r"\s+", " ", _NUMBER.sub(_round, m.group(2))).strip() + '"', svg)
    svg = re.sub(r'(<path\b[^>]*?\sd=")([^"]*)"', lambda m: m.group(1) + short_path(m.group(2)) + '"',
                 svg)
    svg = re.sub(r' transform="rotate\(-?0 [^)]*\)"', "", svg)
    svg = _FONTS.sub("", svg)
    svg = re.sub(r">\s+<", "><", svg)
    return _style_classes(svg)


def _drop_bare_groups(svg: str) -> str:
    """Without the <g> elements that have no attributes (they draw nothing and set nothing)."""
    stack = []

    def one(m):
        tag = m.group(0)
        if tag == "</g>":
            return "" if stack.pop() else tag
        if tag.endswith("/>"):
            return tag
        stack.append(tag == "<g>")
        return "" if tag == "<g>" else tag

    return re.sub(r"<g\b[^>]*>|</g>", one, svg)


def _style_classes(svg: str, min_uses: int = 3) -> str:
    """A style attribute repeated `min_uses` times or more as a class, the rule once in the SVG's
    <style> (class names from a hash of the style, so the same style is the same rule in every
    figure; a class rule outranks the `*` rule matplotlib writes, as the inline style did)."""
    counts = {}
    for st in re.findall(r'<\w+ [^>]*?style="([^"]*)"', svg):
        counts[st] = counts.get(st, 0) + 1
    names = {st: "s" + hashlib.sha1(st.encode("utf-8")).hexdigest()[:6]
             for st, n in counts.items() if n >= min_uses}
    if not names or "</style>" not in svg:
        return svg

    def one(m):
        attrs = m.group(2)
        st = re.search(r' style="([^"]*)"', attrs)
        if not st or st.group(1) not in names or " class=" in attrs:
            return m.group(0)
        cls = ' class="%s"' % names[st.group(1)]
        return "<" + m.group(1) + attrs.replace(st.group(0), cls)

    svg = re.sub(r"<(\w+)( [^>]*)", one, svg)
    rules = "".join(f".{n}{{{st}}}" for st, n in sorted(names.items(), key=lambda kv: kv[1]))
    return svg.replace("</style>", rules + "</style>", 1)


def unique_ids(svg: str) -> str:
    """The SVG's ids made unique in a page of many figures: each kept id gets a tag from a hash
    of the SVG's text (`axes_1` -> `axes_1-3f9a0c21`), and so does every reference to it
    (`url(#..)`, `href="#.."`, `xlink:href="#.."`); a referenced id is also shortened
    (`m6ac1c9c6d0` -> `m0-3f9a0c21`); an id nothing refers to is dropped, except
    KEPT_ID_PREFIXES'. Deterministic: the same figure gets the same ids in every render."""
    found = re.findall(r'\sid="([^"]+)"', svg)
    refs = (set(re.findall(r"url\(#([^)\s]+)\)", svg))
            | set(re.findall(r'href="#([^"]+)"', svg))) & set(found)
    tag = hashlib.sha1(svg.encode("utf-8")).hexdigest()[:8]
    # a referenced id is renamed short (its first letter and a number: matplotlib's are hashes)
    short = {i: f"{i[0]}{k}" for k, i in enumerate(dict.fromkeys(i for i in found if i in refs))}

    def new_id(m):
        i = m.group(1)
        if i in refs:
            return f' id="{short[i]}-{tag}"'
        return f' id="{i}-{tag}"' if i.startswith(KEPT_ID_PREFIXES) else ""

    svg = re.sub(r'\sid="([^"]+)"', new_id, svg)
    svg = re.sub(r"url\(#([^)\s]+)\)",
                 lambda m: f"url(#{short[m.group(1)]}-{tag})" if m.group(1) in refs
                 else m.group(0), svg)
    return re.sub(r'((?:xlink:)?href)="#([^"]+)"',
                  lambda m: f'{m.group(1)}="#{short[m.group(2)]}-{tag}"' if m.group(2) in refs
                  else m.group(0), svg)


def clean_svg(svg: str, label: str = "") -> str:
    """Matplotlib's SVG as an inline element: no prologue, doctype, comments or metadata, scaled
    to the page's width, named for assistive technology (role="img", aria-label and a <title>
    first child, as WAI's SVG guidance asks), compacted (compact_svg) and with ids unique in
    the page (unique_ids), without the <g> wrappers left with no attribute."""
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>", "", svg)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    label = label or "figure"
    svg = compact_svg(svg)
    svg = svg.replace("<svg ", f'<svg class="fig" role="img" aria-label="{_attr(label)}" ', 1)
    svg = re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + f"<title>{html.escape(label)}</title>",
                 svg, count=1)
    return _drop_bare_groups(unique_ids(svg.strip()))
