"""Check a machine before the study spends any time on it (`make doctor`; `make study` runs the
same check first): the platform, a Python for each `python=X.Y` pin of the env files the study plans
(found exactly as the env builder finds them: scripts/build_env.py), and the disk space for the envs
not built yet (against the measured need per env, `DISK_NEED`, which names its run note). Prints
each missing piece with the command that installs it and exits 1 when the study cannot run.

What only the tests need (Chromium for the report's browser tests, the SLURM and munge programs
for the cluster test) is a check of its own: `--for study` prints it as information and does not
fail on it; `--for test` (`make doctor-tests`) fails on it.

    python scripts/doctor.py [--for study|test] [--quiet] [-- SNAKEMAKE ARGS]

Snakemake's own arguments after `--` (make study's ARGS) are read for what changes the plan:
`--configfile`, `--config key=value`, `--sdm conda` (conda brings its own Python: conda is checked
instead of the interpreters).
"""
import argparse
import glob
import os
import platform
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from build_env import BuildError, find_interpreter  # noqa: E402

from driver.study.envspec import SpecError, parse_spec  # noqa: E402

# What one built env takes on disk, in GiB, as measured after building the default study's envs (the
# run note says how): its venv under env_root with its share of uv's download cache, whose files the
# venv hardlinks when both are on one disk; where the cache is on another disk it needs its own share
# there (cache_gib_per_env), and the venv's files are copies.
DISK_NEED = {"note": "docs/runs/2026-11-26-intel-xeon-2c-4db20bbf-fresh-clone.md",
             "gib_per_env": 0.9, "cache_gib_per_env": 0.8}
PLATFORMS = {("Linux", "x86_64")}
CHROMIUM_INSTALL = "apt-get install chromium   (Debian/Ubuntu; the browser tests look for /usr/bin/chromium)"
SLURM_INSTALL = "apt-get install slurm-wlm munge   (Debian/Ubuntu: slurmctld, slurmd, the client programs)"


def merged(base, over):
    """A config laid over another as Snakemake does: mappings merge key by key, the rest replaces."""
    out = dict(base)
    for key, value in (over or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def snakemake_options(args):
    """(configfiles, --config overrides, conda?) from Snakemake's command line."""
    configfiles, overrides, conda, i = [], {}, False, 0
    while i < len(args):
        arg = args[i]
        name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        values = [inline] if inline else []
        j = i + 1
        if not inline:
            while j < len(args) and not args[j].startswith("-"):
                values.append(args[j])
                j += 1
        if name in ("--configfile", "--configfiles"):
            configfiles += values
        elif name in ("--config", "-C"):
            for item in values:
                key, sep, value = item.partition("=")
                if sep:
                    overrides[key] = yaml.safe_load(value)
        elif name in ("--sdm", "--software-deployment-method", "--deployment-method"):
            conda = conda or "conda" in values
        elif name == "--use-conda":
            conda = True
        i = j
    return configfiles, overrides, conda


def load_config(configfiles=(), overrides=None):
    with open(os.path.join(REPO, "config.yaml")) as handle:
        config = yaml.safe_load(handle) or {}
    for path in configfiles:
        with open(path) as handle:
            config = merged(config, yaml.safe_load(handle) or {})
    return merged(config, overrides or {})


def planned_envs(config):
    """{env name: facts from its pins} of the envs the study plans (config `envs`, `env_dirs`), as
    rules/common.smk chooses them; a file that cannot be read is left to the study to report."""
    specs = {}
    for folder in config.get("env_dirs", ["envs"]):
        for path in sorted(glob.glob(os.path.join(REPO, folder, "*.yaml"))):
            name = os.path.splitext(os.path.basename(path))[0]
            try:
                with open(path) as handle:
                    specs[name] = parse_spec(name, yaml.safe_load(handle), path)
            except (yaml.YAMLError, SpecError):
                continue
    chosen = config.get("envs", "cpu")
    if isinstance(chosen, list):
        return {n: specs[n] for n in chosen if n in specs}
    return {n: s for n, s in specs.items() if chosen == "all" or s["build"] == chosen}


def install_hint(minor):
    """The commands that install a Python X.Y where the builder finds it."""
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
    hints = []
    if os.path.exists(uv):
        shown = "uv" if shutil.which("uv") else os.path.relpath(uv) if uv.startswith(REPO) else uv
        hints.append("%s python install %s" % (shown, minor))
    if shutil.which("pyenv") or os.path.isdir(os.environ.get("PYENV_ROOT") or
                                              os.path.expanduser("~/.pyenv")):
        hints.append("pyenv install %s" % minor)
    if not hints:
        hints = ["uv python install %s" % minor, "pyenv install %s" % minor]
    hints.append("or config `interpreters: {\"%s\": /path/to/python%s}`" % (minor, minor))
    return "; ".join(hints)


def check_platform():
    here = (platform.system(), platform.machine())
    if here in PLATFORMS:
        return [], "platform %s %s" % here
    return ["platform %s %s: the env files pin wheels for Linux x86_64 (manylinux) only; run the "
            "study on a Linux x86_64 machine" % here], None


def check_interpreters(envs, configured):
    """(missing lines, found lines) for every Python X.Y the planned envs pin."""
    by_minor = {}
    for name, facts in sorted(envs.items()):
        by_minor.setdefault(facts["python"], []).append(name)
    def look(minor):  # each look starts interpreters: all versions at once, so it takes a moment
        try:
            return find_interpreter(minor, configured)
        except BuildError:
            return None

    minors = sorted(by_minor, key=lambda v: tuple(int(x) for x in v.split(".")))
    with ThreadPoolExecutor(max_workers=max(1, len(minors))) as pool:
        results = dict(zip(minors, pool.map(look, minors)))
    missing, found = [], []
    for minor in minors:
        users = by_minor[minor]
        if results[minor]:
            exe, version = results[minor]
            found.append("Python %s: %s (%s) for %d env(s)" % (minor, exe, version, len(users)))
        else:
            missing.append("Python %s, for %s: not found on PATH, in pyenv, conda, uv or config "
                           "`interpreters`. Install it: %s" % (minor, ", ".join(users),
                                                              install_hint(minor)))
    return missing, found


def built(env_root, name):
    """Whether a venv of this env is under env_root (<name>-<hash>/, as scripts/build_env.py names
    it; tf1.15-gpu-<hash> is not tf1.15's)."""
    pattern = re.compile(re.escape(name) + r"-[0-9a-f]{8,}")
    return any(pattern.fullmatch(os.path.basename(os.path.dirname(os.path.dirname(exe))))
               for exe in glob.glob(os.path.join(env_root, name + "-*", "bin", "python")))


def existing(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def uv_cache_dir():
    return os.environ.get("UV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "uv")


def check_disk(envs, env_root):
    todo = [n for n in envs if not built(env_root, n)]
    needs = {existing(env_root): ("envs", DISK_NEED["gib_per_env"] * len(todo))}
    cache = existing(uv_cache_dir())
    if os.stat(cache).st_dev != os.stat(existing(env_root)).st_dev:
        needs[cache] = ("uv's download cache", DISK_NEED["cache_gib_per_env"] * len(todo))
    missing, found = [], []
    for where, (what, need) in needs.items():
        free = shutil.disk_usage(where).free / 2 ** 30
        line = ("disk for %s: %.1f GiB free at %s; %d of %d envs to build, about %.1f GiB (the "
                "measured need per env: %s)" % (what, free, where, len(todo), len(envs), need,
                                                DISK_NEED["note"]))
        if free < need:
            missing.append("%s. Free space there, or set config `env_root` (UV_CACHE_DIR for the "
                           "cache) to a folder on a larger disk" % line)
        else:
            found.append(line)
    return missing, found or None


def check_conda():
    if shutil.which("conda") or shutil.which("mamba"):
        return [], "conda: %s (--sdm conda: it brings each env's Python)" % (
            shutil.which("conda") or shutil.which("mamba"))
    return ["conda: not on PATH, and --sdm conda needs it. Install Miniforge "
            "(https://conda-forge.org/download/), or drop --sdm conda to build venvs"], None


def check_test_tools():
    sys.path.insert(0, os.path.join(REPO, "tests", "support"))
    from slurm_cluster import missing_binaries
    missing, found = [], []
    chromium = "/usr/bin/chromium"
    try:
        from browser import CHROMIUM as chromium
    except ImportError:
        pass
    if os.path.exists(chromium):
        found.append("chromium: %s" % chromium)
    else:
        missing.append("chromium: not at %s (the report's browser tests are skipped). Install it: %s"
                       % (chromium, CHROMIUM_INSTALL))
    absent = missing_binaries()
    if absent:
        missing.append("SLURM: %s not found (the cluster test is skipped). Install them: %s"
                       % (", ".join(absent), SLURM_INSTALL))
    else:
        found.append("SLURM: slurmctld, slurmd, munged and the client programs")
    return missing, found


def study_checks(rest):
    """(missing, found) pairs of what `make study` needs, for Snakemake's arguments `rest`."""
    configfiles, overrides, conda = snakemake_options(rest)
    config = load_config(configfiles, overrides)
    envs = planned_envs(config)
    if conda:
        return [check_platform(), check_conda()]
    return [check_platform(), check_interpreters(envs, config.get("interpreters") or {}),
            check_disk(envs, os.path.join(REPO, config.get("env_root", ".envs")))]


def report(target, results, quiet, informative=False):
    """Print one target's findings; return how many pieces are missing for it. An informative
    target's gaps are printed as information and do not count."""
    gaps = 0
    for more, ok in results:
        for line in ([] if quiet or not ok else ok if isinstance(ok, list) else [ok]):
            print("[doctor] ok: %s" % line)
        for line in more:
            if informative:
                print("[doctor] for make test only: %s" % line)
            else:
                print("[doctor] MISSING for make %s: %s" % (target, line), file=sys.stderr)
        gaps += len(more)
    if informative:
        if gaps:
            print("[doctor] make study does not need these; `make doctor-tests` checks what the "
                  "tests need")
        return 0
    if gaps:
        print("[doctor] make %s: %d missing; install them and run `make doctor%s` again"
              % (target, gaps, "-tests" if target == "test" else ""), file=sys.stderr)
    elif not quiet:
        print("[doctor] make %s: everything it needs is here" % target)
    return gaps


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--for", dest="target", choices=["study", "test"], default="study",
                        help="what must be here: what make study needs (default; the tests' "
                             "tools are printed as information), or what make test needs")
    parser.add_argument("--quiet", action="store_true",
                        help="print only what is missing for the target")
    args = parser.parse_args(own)
    if args.target == "test":
        return 1 if report("test", [check_platform(), check_test_tools()], args.quiet) else 0
    missing = report("study", study_checks(rest), args.quiet)
    if not args.quiet:
        report("test", [check_test_tools()], False, informative=True)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
