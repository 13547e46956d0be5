"""Version numbers as tuples: the one ordering of versions in the project (the runner picks
version-specific code paths by it, the driver orders envs by it). Standard library only."""
import re


def version_tuple(text):
    """'2.15.1' -> (2, 15, 1); pre-release tails ('0b1', 'rc0') are dropped after the number."""
    parts = []
    for piece in str(text).split(".")[:3]:
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def major(text):
    """'2.15.1' -> 2; None when the text does not start with a number."""
    parts = version_tuple(text or "")
    return parts[0] if parts else None


def sort_key(text):
    """A name or version by every number in it: 'tf1.14' -> (1, 14), 'torch2.3' -> (2, 3),
    '2.15.1' -> (2, 15, 1); text without a number sorts last."""
    return tuple(int(n) for n in re.findall(r"\d+", str(text or ""))) or (float("inf"),)
