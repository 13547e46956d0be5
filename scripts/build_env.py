"""Realise one env file (envs/<name>.yaml) as a venv, without conda.

Finds an interpreter for the file's pinned `python=X.Y`, creates the venv in a folder named by the
file's hash (a changed file builds a new env; an unchanged one is reused), installs the `pip:`
section with uv where present (much faster) or pip, compiles its bytecode (as pip does on install;
uv does not, and where PYTHONDONTWRITEBYTECODE is set every cell process would compile TensorFlow's
modules again on import), checks that the framework imports (and, for a GPU build on a machine with
a GPU, that it sees one), and writes a manifest with the interpreter, the frozen package set and
the spec hash. Machine-local package sources
(config `package_sources`: find-links folders, extra index URLs) are applied when present: a folder
that does not exist or an index that does not answer is skipped with a log line, and the sources used
are part of the venv's identity and of its manifest. `--plan` prints what would run. A build that fails still
writes a manifest (status failed, the cause, the log tail): the cells of that env are then written
as failed with that reason, and every other env's cells run.
"""
import argparse
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.study.envspec import SpecError, parse_spec, spec_hash  # noqa: E402
from driver.study.gpucheck import gpu_check  # noqa: E402
from driver.study.locks import machine_lock  # noqa: E402
from tfspeed import backends, frameworks  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402


def import_check(framework):
    """The import check of a built env: its framework's module (the catalogue row's `module`,
    tfspeed/frameworks.py) imported as m, or numpy for an env of no framework the catalogue holds;
    the check prints m.__version__ after it."""
    row = frameworks.get(framework)
    return "import %s as m" % (row.module if row is not None else "numpy")


class BuildError(Exception):
    def __init__(self, reason, log_tail=""):
        Exception.__init__(self, reason)
        self.reason, self.log_tail = reason, log_tail


def python_version_of(exe):
    try:
        out = subprocess.run([exe, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def interpreter_candidates(minor, configured):
    """Where a Python X.Y may live, in order: config, PATH, pyenv, conda, uv, system folders."""
    if configured.get(minor):
        yield configured[minor]
    for name in ("python%s" % minor, "python%s" % minor.replace(".", "")):
        found = shutil.which(name)
        if found:
            yield found
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    for root in filter(None, roots):
        for exe in sorted(glob.glob(os.path.join(root, "versions", minor + "*", "bin", "python")),
                          reverse=True):
            yield exe
    conda_roots = [os.environ.get("CONDA_PREFIX", ""), os.path.expanduser("~/miniconda3"),
                   os.path.expanduser("~/miniforge3"), os.path.expanduser("~/anaconda3")]
    for root in filter(None, conda_roots):
        yield from glob.glob(os.path.join(root, "envs", "*", "bin", "python" + minor))
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
    if os.path.exists(uv):
        try:
            out = subprocess.run([uv, "python", "find", "--no-python-downloads", minor],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                yield out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    for folder in ("/usr/local/bin", "/usr/bin", "/opt/homebrew/bin"):
        yield os.path.join(folder, "python" + minor)


def find_interpreter(minor, configured):
    tried = []
    for exe in interpreter_candidates(minor, configured):
        if exe in tried:
            continue
        tried.append(exe)
        if os.path.exists(exe):
            version = python_version_of(exe)
            if version and version.rsplit(".", 1)[0] == minor:
                return exe, version
    raise BuildError(
        "no Python %s found. Looked for: config `interpreters: {'%s': /path/to/python}`, "
        "python%s on PATH, pyenv (~/.pyenv/versions/%s*), conda envs, `uv python find %s`, and "
        "/usr/bin, /usr/local/bin. Tried: %s" % (minor, minor, minor, minor, minor,
                                                 ", ".join(tried) or "nothing"))


def run_logged(cmd, label, tail, timeout_s=3600):
    """Run a build step, echo its output, print a progress line at least every 10 s."""
    print("[tfspeed] %s: %s" % (label, " ".join(cmd)), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def pump():
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            tail.append(line)
            print(line, flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    start = time.monotonic()
    while True:
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - start
            print("[tfspeed] %s: still working, %.0f s" % (label, elapsed), flush=True)
            if elapsed > timeout_s:
                proc.kill()
                raise BuildError("%s timed out after %d s" % (label, timeout_s)) from None
    reader.join(timeout=5)
    if proc.returncode != 0:
        raise BuildError("%s failed (exit %d): %s" % (label, proc.returncode,
                                                      (tail[-1] if tail else "")),
                         "\n".join(tail[-40:]))


BYTECODE_MARKER = ".tfspeed-bytecode"


def compile_bytecode(venv, tail):
    """Write the venv's .pyc files in place, after the venv has its final path (a .pyc records the
    path of its source). Idempotent: a marker says it is done, so a venv built before this step is
    compiled on its next reuse. Files that do not compile (some packages ship sources for other
    Python versions) are left to the interpreter, with a log line; the build does not fail on them."""
    marker = os.path.join(venv, BYTECODE_MARKER)
    if os.path.exists(marker):
        return 0.0
    site = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    t0 = time.monotonic()
    cmd = [os.path.join(venv, "bin", "python"), "-m", "compileall", "-q", "-j", "0"] + site
    try:
        run_logged(cmd, "compile bytecode", tail)
    except BuildError as exc:
        print("[tfspeed] compile bytecode: some files did not compile (%s); they are compiled "
              "in memory on import" % exc.reason, flush=True)
    with open(marker, "w") as handle:
        handle.write("compileall\n")
    return round(time.monotonic() - t0, 2)


def frozen_packages(venv):
    """name -> version from the venv's .dist-info folders (works without pip in the venv)."""
    found = {}
    for path in glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "*.dist-info")):
        match = re.match(r"(.+?)-([^-]+)\.dist-info$", os.path.basename(path))
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return dict(sorted(found.items()))


NO_SOURCES = {"find_links": [], "extra_index_urls": [], "packages": []}


def index_reachable(url, timeout_s=5.0):
    """(True, "") when the index answers at all (any HTTP status below 500), else (False, why)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return True, ""
    except urllib.error.HTTPError as exc:
        return (exc.code < 500), "HTTP %d" % exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return False, str(getattr(exc, "reason", exc))


def is_url(text):
    return re.match(r"^https?://", text) is not None


def applied_sources(sources, pins, exists=os.path.isdir, reachable=index_reachable):
    """Which of the configured package sources this env uses, and why the others are not used.

    sources: config `package_sources`; pins: the env's name -> version. Returns (used, skipped):
    used is {find_links, extra_index_urls, packages} (packages: the env's pins the sources serve,
    [] = every pin; nothing when the env pins none of the configured packages), skipped a list of
    lines. A find-links folder that does not exist and an index that does not answer are skipped:
    uv fails the whole install on either.
    """
    sources = dict(NO_SOURCES, **(sources or {}))
    wanted = [p.lower().replace("_", "-") for p in sources["packages"]]
    served = [p for p in wanted if p in pins]
    if wanted and not served:
        return dict(NO_SOURCES), []
    used, skipped = {"find_links": [], "extra_index_urls": [], "packages": served}, []
    for link in sources["find_links"]:
        if is_url(link):
            ok, why = reachable(link)
        else:
            link = os.path.abspath(os.path.expanduser(link[7:] if link.startswith("file://")
                                                      else link))
            ok, why = exists(link), "no such folder"
        if ok:
            used["find_links"].append(link)
        else:
            skipped.append("find_links %s: %s" % (link, why))
    for url in sources["extra_index_urls"]:
        ok, why = reachable(url)
        if ok:
            used["extra_index_urls"].append(url)
        else:
            skipped.append("extra_index_urls %s: does not answer (%s)" % (url, why))
    if not used["find_links"] and not used["extra_index_urls"]:
        used = dict(NO_SOURCES)
    return used, skipped


def source_args(used):
    args = []
    for link in used["find_links"]:
        args += ["--find-links", link]
    for url in used["extra_index_urls"]:
        args += ["--extra-index-url", url]
    return args


def env_identity(text, used):
    """The venv's hash: the env file (and its lock), plus the package sources when any is used
    (a source changes what gets installed: torch 2.13.0+cpu from a CPU wheel, 2.13.0 from PyPI)."""
    if not (used["find_links"] or used["extra_index_urls"]):
        return spec_hash(text)
    return spec_hash(text + "\n# package sources: " + json.dumps(used, sort_keys=True))


def install_plan(facts, staging, req_base, exe, uv, use_uv, used, lock_file=None):
    """What a build runs, without running it: the files it writes and its commands, in order.

    Pure: the same arguments give the same plan, and nothing is read or written. With sources
    limited to some packages, those are installed first with the sources and the rest without (uv
    takes a package from the first index that has it, so an extra index serves only what it is for).
    """
    if use_uv:
        create = [uv, "venv", "--quiet", "--python", exe, staging]
        install = [uv, "pip", "install", "--python", os.path.join(staging, "bin", "python"),
                   "--no-deps"]
    else:
        create = [exe, "-m", "venv", staging]
        install = [os.path.join(staging, "bin", "python"), "-m", "pip", "install",
                   "--disable-pip-version-check", "--no-deps"]
    sourced = used["packages"] if (used["find_links"] or used["extra_index_urls"]) else []
    files, steps = {}, [("create venv", create)]
    if lock_file:
        steps.append(("install %s" % facts["name"],
                      install + source_args(used) + ["--require-hashes", "-r", lock_file]))
        return {"files": files, "steps": steps}
    pins = ["%s==%s" % kv for kv in facts["pins"].items()]
    if sourced:
        first = [line for line in pins if line.split("==")[0] in sourced]
        steps.append(("install %s (package sources)" % ", ".join(sourced),
                      install + source_args(used) + first))
        pins = [line for line in pins if line not in first]
    req = req_base + ".requirements.txt"
    files[req] = "\n".join(facts["pip_options"] + pins) + "\n"
    extra = [] if sourced else source_args(used)
    steps.append(("install %s" % facts["name"], install + extra + ["-r", req]))
    return {"files": files, "steps": steps}


def resolved_versions(pins, packages):
    """The pins whose installed version says more than the pin (torch==2.13.0 -> 2.13.0+cpu)."""
    return {name: packages[name] for name, pin in pins.items()
            if name in packages and packages[name] != pin}


def prepare(spec_file, env_root, installer, configured, sources, find_python=True):
    """Read the env file and decide everything a build does; returns (manifest, plan)."""
    name = os.path.splitext(os.path.basename(spec_file))[0]
    with open(spec_file) as handle:
        text = handle.read()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BuildError("%s: not valid YAML: %s" % (spec_file, exc)) from exc
    try:
        facts = parse_spec(name, doc, spec_file)
    except SpecError as exc:
        raise BuildError(str(exc)) from exc
    lock_file = os.path.splitext(spec_file)[0] + ".lock.txt"
    locked = os.path.exists(lock_file)
    if locked:
        with open(lock_file) as handle:
            text += handle.read()
    digest = spec_hash(text)
    used, skipped = applied_sources(sources, facts["pins"])
    for line in skipped:
        print("[tfspeed] %s: package source skipped, %s" % (name, line), file=sys.stderr,
              flush=True)
    identity = env_identity(text, used)
    venv = os.path.abspath(os.path.join(env_root, "%s-%s" % (name, identity)))
    manifest = dict(facts, spec_file=spec_file, spec_hash=digest, env_hash=identity, venv=venv,
                    locked=locked, package_sources=dict(used, skipped=skipped))
    try:
        exe, version = find_interpreter(facts["python"], configured)
    except BuildError:
        if find_python:
            raise
        exe, version = "<python%s, not found here>" % facts["python"], None  # a plan only
    manifest.update(base_interpreter=exe, python=version,
                    python_executable=os.path.join(venv, "bin", "python"))
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
    use_uv = installer == "uv" or (installer == "auto" and os.path.exists(uv))
    manifest["installer"] = "uv" if use_uv else "pip"
    plan = install_plan(facts, venv + ".partial",
                        os.path.join(os.path.abspath(env_root), "%s-%s" % (name, identity)),
                        exe, uv, use_uv, used, lock_file if locked else None)
    return manifest, plan


def build(spec_file, env_root, installer, configured, tail, sources=None):
    manifest, plan = prepare(spec_file, env_root, installer, configured, sources)
    name, venv = manifest["name"], manifest["venv"]
    done_marker = os.path.join(venv, ".tfspeed-complete")
    if os.path.exists(done_marker):
        print("[tfspeed] %s: reusing %s (spec and package sources unchanged)" % (name, venv),
              flush=True)
        manifest.update(reused=True, install_s=0.0)
    else:
        staging = venv + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(env_root, exist_ok=True)
        for path, body in plan["files"].items():
            with open(path, "w") as handle:
                handle.write(body)
        t0 = time.monotonic()
        # The pip section is the whole resolved set, pinned: install it as is, resolve nothing.
        for label, cmd in plan["steps"]:
            run_logged(cmd, label, tail)
        manifest["install_s"] = round(time.monotonic() - t0, 2)
        shutil.rmtree(venv, ignore_errors=True)
        os.rename(staging, venv)  # a venv's bin/python works after a move; scripts are unused
        with open(done_marker, "w") as handle:
            handle.write(manifest["env_hash"] + "\n")
        manifest["reused"] = False
    manifest["bytecode_s"] = compile_bytecode(venv, tail)
    manifest["packages"] = frozen_packages(venv)
    # what ran, not what was asked for: torch==2.13.0 installs as 2.13.0+cpu from a CPU wheel
    manifest["resolved"] = resolved_versions(manifest["pins"], manifest["packages"])
    row = frameworks.get(manifest["framework"])
    for pkg in (manifest["framework"],) + (row.packages if row is not None else ()):
        if pkg in manifest["resolved"] and manifest["pins"][pkg] == manifest["framework_version"]:
            manifest["framework_version"] = manifest["resolved"][pkg]
            break
    check = import_check(manifest["framework"])
    try:
        run_logged([manifest["python_executable"], "-c", check + "; print(m.__version__)"],
                   "import check %s" % name, tail)
    except BuildError as exc:
        hint = backends.hook(manifest["framework"], "import_hint")  # the framework's own word
        why = hint(manifest["packages"], manifest["build"]) if hint is not None else None
        if why:
            raise BuildError("%s; %s" % (exc.reason, why), exc.log_tail) from None
        raise
    ok, manifest["gpu_check"] = gpu_check(manifest)
    if not ok:
        raise BuildError(manifest["gpu_check"])
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="envs/<name>.yaml")
    parser.add_argument("--env-root", required=True, help="where venvs live")
    parser.add_argument("--installer", default="auto", choices=("auto", "uv", "pip"))
    parser.add_argument("--interpreters", default="{}", help="YAML/JSON mapping X.Y -> python")
    parser.add_argument("--package-sources", default="{}",
                        help="YAML/JSON {find_links: [...], extra_index_urls: [...], packages: [...]}")
    parser.add_argument("--lock", default=None, help="the machine-wide timing lock file")
    parser.add_argument("--out", help="the manifest to write")
    parser.add_argument("--plan", action="store_true",
                        help="print the build plan (sources used and skipped, files, commands) as "
                             "JSON and install nothing")
    args = parser.parse_args(argv)
    sources = yaml.safe_load(args.package_sources) or {}
    if args.plan:
        try:
            manifest, plan = prepare(args.spec, args.env_root, args.installer,
                                     yaml.safe_load(args.interpreters) or {}, sources,
                                     find_python=False)
        except BuildError as exc:
            sys.exit("[tfspeed] no plan: %s" % exc.reason)
        json.dump({"venv": manifest["venv"], "env_hash": manifest["env_hash"],
                   "spec_hash": manifest["spec_hash"],
                   "package_sources": manifest["package_sources"], "files": plan["files"],
                   "steps": plan["steps"]}, sys.stdout, indent=1)
        print()
        return
    if not args.out:
        parser.error("--out is required unless --plan")
    tail = []
    started = datetime.datetime.now(datetime.timezone.utc).isoformat()
    # Env builds load the machine: never beside a timing job (the lock's shared side: builds may
    # run beside each other, two at a time under the default profile's two cores).
    with machine_lock(args.lock, shared=True):
        try:
            manifest = build(args.spec, args.env_root, args.installer,
                             yaml.safe_load(args.interpreters) or {}, tail, sources)
            manifest["status"], manifest["reason"] = "ok", ""
        except BuildError as exc:
            print("[tfspeed] env build failed: %s" % exc.reason, file=sys.stderr, flush=True)
            manifest = {"status": "failed", "reason": exc.reason, "spec_file": args.spec,
                        "log_tail": exc.log_tail or "\n".join(tail[-40:])}
    manifest["built_utc"] = started
    write_json(args.out, manifest)


if __name__ == "__main__":
    main()
