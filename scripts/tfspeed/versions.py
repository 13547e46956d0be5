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
