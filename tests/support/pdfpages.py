"""How full each page of a PDF that Chromium printed is (tests only; no PDF library needed).

Chromium (Skia) writes one Flate-compressed content stream per page. `page_fill(path)` runs a
small interpreter over each: the graphics state stack (q / Q / cm), the fill colour (white
fills are the page's background, not content), paths (re, m, l, c, v, y) and what paints them
(f, F, f*, B, b, S, s), text positions (BT, Tm, Td, TD, T*, Tj, TJ, ') and XObjects (Do, the unit
square through the current matrix). It returns, per page, the share of the page's height that
lies between its top edge and the lowest painted mark: 0.3 means the page's content ends 30 %
of the way down, so the rest of the page is blank.
"""
from __future__ import annotations

import re
import zlib
from pathlib import Path

TOKEN = re.compile(rb"""
    (?P<hex><[0-9A-Fa-f\s]*>)
  | (?P<str>\((?:\\.|[^\\()])*\))
  | (?P<num>[-+]?(?:\d+\.?\d*|\.\d+))
  | (?P<name>/[^\s/<>\[\]()]+)
  | (?P<arr>[\[\]])
  | (?P<dict><<|>>)
  | (?P<op>[A-Za-z'"*]+)
""", re.X)


def _mul(m, n):
    """m x n for PDF's [a b c d e f] matrices (m applied first)."""
    a, b, c, d, e, f = m
    A, B, C, D, E, F = n
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D,
            e * A + f * C + E, e * B + f * D + F)


def _apply(m, x, y):
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _objects(data: bytes) -> dict[int, bytes]:
    out = {}
    for m in re.finditer(rb"(\d+) 0 obj", data):
        end = data.find(b"endobj", m.end())
        out[int(m.group(1))] = data[m.end():end]
    return out


def _stream(body: bytes) -> bytes:
    start = body.index(b"stream") + len(b"stream")
    raw = body[start:body.rindex(b"endstream")].lstrip(b"\r\n")
    return zlib.decompress(raw) if b"FlateDecode" in body[:start] else raw


def lowest_mark(content: bytes) -> float | None:
    """The lowest y (PDF user space, origin at the bottom) of anything painted, or None."""
    ctm = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    stack, operands, path, marks = [], [], [], []
    white = False
    tm = tlm = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    leading = 0.0
    for m in TOKEN.finditer(content):
        kind = m.lastgroup
        if kind == "num":
            operands.append(float(m.group()))
            continue
        if kind != "op":
            if kind in ("hex", "str", "name"):
                operands.append(m.group())
            continue
        op = m.group().decode()
        nums = [x for x in operands if isinstance(x, float)]
        if op == "q":
            stack.append((ctm, white))
        elif op == "Q" and stack:
            ctm, white = stack.pop()
        elif op == "cm" and len(nums) >= 6:
            ctm = _mul(tuple(nums[-6:]), ctm)
        elif op in ("rg", "g", "k", "sc", "scn") and nums:
            white = all(v >= 0.999 for v in nums) if op != "k" else all(v <= 0.001 for v in nums)
        elif op == "re" and len(nums) >= 4:
            x, y, w, h = nums[-4:]
            path += [(x, y), (x + w, y + h)]
        elif op in ("m", "l") and len(nums) >= 2:
            path.append(tuple(nums[-2:]))
        elif op in ("c", "v", "y") and len(nums) >= 2:
            path.append(tuple(nums[-2:]))
        elif op in ("f", "F", "f*", "B", "B*", "b", "b*", "S", "s"):
            if op in ("S", "s") or not white:
                marks += [_apply(ctm, x, y)[1] for x, y in path]
            path = []
        elif op in ("n", "W", "W*"):
            if op == "n":
                path = []
        elif op == "BT":
            tm = tlm = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        elif op == "Tm" and len(nums) >= 6:
            tm = tlm = tuple(nums[-6:])
        elif op in ("Td", "TD") and len(nums) >= 2:
            tm = tlm = _mul((1, 0, 0, 1, nums[-2], nums[-1]), tlm)
            if op == "TD":
                leading = -nums[-1]
        elif op == "TL" and nums:
            leading = nums[-1]
        elif op == "T*":
            tm = tlm = _mul((1, 0, 0, 1, 0, -leading), tlm)
        elif op in ("Tj", "TJ", "'", '"'):
            marks.append(_apply(_mul(tm, ctm), 0.0, 0.0)[1])
        elif op == "Do":
            marks += [_apply(ctm, 0.0, 0.0)[1], _apply(ctm, 1.0, 1.0)[1]]
        operands = []
    return min(marks) if marks else None


def page_fill(path) -> list[float]:
    """Per page, in order: how far down the page (0 top, 1 bottom) its lowest mark lies."""
    data = Path(path).read_bytes()
    objs = _objects(data)

    def kids(n):
        body = objs[n]
        if re.search(rb"/Type\s*/Pages\b", body):
            refs = re.search(rb"/Kids\s*\[([^\]]*)\]", body).group(1)
            return [p for k in re.findall(rb"(\d+) 0 R", refs) for p in kids(int(k))]
        return [n]

    root = next(n for n, b in objs.items() if re.search(rb"/Type\s*/Catalog\b", b))
    pages_ref = int(re.search(rb"/Pages\s+(\d+) 0 R", objs[root]).group(1))
    out = []
    for n in kids(pages_ref):
        body = objs[n]
        box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", body).group(1).split()]
        height = box[3] - box[1]
        refs = re.search(rb"/Contents\s*(\[[^\]]*\]|\d+ 0 R)", body).group(1)
        content = b"\n".join(_stream(objs[int(k)]) for k in re.findall(rb"(\d+) 0 R", refs))
        low = lowest_mark(content)
        out.append(0.0 if low is None else max(0.0, min(1.0, (box[3] - low) / height)))
    return out
