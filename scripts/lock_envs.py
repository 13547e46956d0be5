"""Lock env files with hashes: envs/<name>.lock.txt next to envs/<name>.yaml.

Each lock lists the env's pinned packages with the sha256 of every file PyPI offers for them
(`uv pip compile --generate-hashes`). Once a lock exists, the venv builder installs from it with
`--require-hashes`, so a package whose files changed on the index fails the build instead of
running. Usage: python scripts/lock_envs.py [NAME ...] [--env-dir envs] [--config config.yaml]

An env that pins a package the config's `package_sources` serve (torch: the CPU wheel comes from a
folder or PyTorch's CPU index, not from PyPI) is not locked, with the reason: PyPI's hashes are those
of the CUDA build, so a lock would either refuse the CPU wheel or pull gigabytes of CUDA packages.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.study.envspec import SpecError, parse_spec  # noqa: E402


def sourced_pins(config_path):
    """The package names the config's `package_sources` serve (lower case, '-' for '_'); an empty
    `packages` list means every pin, returned as None."""
    if not config_path or not Path(config_path).exists():
        return set()
    config = yaml.safe_load(Path(config_path).read_text()) or {}
    sources = config.get("package_sources") or {}
    if not (sources.get("find_links") or sources.get("extra_index_urls")):
        return set()
    packages = sources.get("packages") or []
    return {p.lower().replace("_", "-") for p in packages} if packages else None


def spec_facts(spec_path):
    return parse_spec(spec_path.stem, yaml.safe_load(spec_path.read_text()), str(spec_path))


def lock(spec_path, uv):
    facts = spec_facts(spec_path)
    lines = facts["pip_options"] + ["%s==%s" % kv for kv in facts["pins"].items()]
    with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
        source = handle.name
    out = spec_path.with_suffix(".lock.txt")
    cmd = [uv, "pip", "compile", source, "--generate-hashes", "--no-deps", "--no-header",
           "--python-version", facts["python"], "--python-platform", "x86_64-manylinux_2_28",
           "--quiet", "-o", str(out)]
    try:
        subprocess.run(cmd, check=True)
    finally:
        os.unlink(source)
    text = out.read_text()
    out.write_text("# Hash lock of %s (make lock); the venv builder installs it with "
                   "--require-hashes.\n%s" % (spec_path.name, text))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="env names (default: every env file)")
    repo = Path(__file__).resolve().parent.parent
    parser.add_argument("--env-dir", default=str(repo / "envs"))
    parser.add_argument("--config", default=str(repo / "config.yaml"),
                        help="the config whose package_sources decide which envs are not locked")
    args = parser.parse_args()
    served = sourced_pins(args.config)
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
    specs = sorted(Path(args.env_dir).glob("*.yaml"))
    if args.names:
        specs = [s for s in specs if s.stem in args.names]
        missing = set(args.names) - {s.stem for s in specs}
        if missing:
            sys.exit("no env file for %s under %s" % (", ".join(sorted(missing)), args.env_dir))
    failed = []
    for spec in specs:
        try:
            pins = set(spec_facts(spec)["pins"])
            overlap = sorted(pins if served is None else pins & served)
            if overlap:
                print("not locked %s: %s comes from the config's package_sources (%s), whose "
                      "files PyPI's hashes do not cover" % (spec.name, ", ".join(overlap),
                                                            args.config), flush=True)
                continue
            print("locked %s -> %s" % (spec.name, lock(spec, uv).name), flush=True)
        except (SpecError, subprocess.CalledProcessError) as exc:
            print("could not lock %s: %s" % (spec.name, exc), file=sys.stderr, flush=True)
            failed.append(spec.name)
    if failed:
        sys.exit("not locked: %s" % ", ".join(failed))


if __name__ == "__main__":
    main()
