"""Realise one env file (envs/<name>.yaml) as a venv, without conda.

Finds an interpreter for the file's pinned `python=X.Y`, creates the venv in a folder named by the
file's hash (a changed file builds a new env; an unchanged one is reused), installs the `pip:`
section with uv where present (much faster) or pip, checks that the framework imports, and writes a
manifest with the interpreter, the frozen package set and the spec hash. A build that fails still
writes a manifest (status failed, the cause, the log tail): the cells of that env are then written
as failed with that reason, and every other env's cells run.
"""
import argparse
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.envspec import SpecError, parse_spec, spec_hash  # noqa: E402
from driver.locks import machine_lock  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402

IMPORT_CHECK = {
    "tensorflow": "import tensorflow as m",
    "torch": "import torch as m",
    "jax": "import jax as m",
}


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


def frozen_packages(venv):
    """name -> version from the venv's .dist-info folders (works without pip in the venv)."""
    found = {}
    for path in glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "*.dist-info")):
        match = re.match(r"(.+?)-([^-]+)\.dist-info$", os.path.basename(path))
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return dict(sorted(found.items()))


def build(spec_file, env_root, installer, configured, tail):
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
    venv = os.path.abspath(os.path.join(env_root, "%s-%s" % (name, digest)))
    manifest = dict(facts, spec_file=spec_file, spec_hash=digest, venv=venv, locked=locked)
    exe, version = find_interpreter(facts["python"], configured)
    manifest.update(base_interpreter=exe, python=version,
                    python_executable=os.path.join(venv, "bin", "python"))
    done_marker = os.path.join(venv, ".tfspeed-complete")
    if os.path.exists(done_marker):
        print("[tfspeed] %s: reusing %s (spec unchanged)" % (name, venv), flush=True)
        manifest.update(reused=True, install_s=0.0)
    else:
        uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")
        use_uv = installer == "uv" or (installer == "auto" and os.path.exists(uv))
        staging = venv + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(env_root, exist_ok=True)
        req = os.path.join(env_root, "%s-%s.requirements.txt" % (name, digest))
        with open(req, "w") as handle:
            handle.write("\n".join(facts["pip_options"] + [
                "%s==%s" % kv for kv in facts["pins"].items()]) + "\n")
        t0 = time.monotonic()
        # The pip section is the whole resolved set, pinned: install it as is, resolve nothing.
        if use_uv:
            run_logged([uv, "venv", "--quiet", "--python", exe, staging], "create venv", tail)
            cmd = [uv, "pip", "install", "--python", os.path.join(staging, "bin", "python"),
                   "--no-deps"]
        else:
            run_logged([exe, "-m", "venv", staging], "create venv", tail)
            cmd = [os.path.join(staging, "bin", "python"), "-m", "pip", "install",
                   "--disable-pip-version-check", "--no-deps"]
        cmd += ["--require-hashes", "-r", lock_file] if locked else ["-r", req]
        run_logged(cmd, "install %s" % name, tail)
        manifest["install_s"] = round(time.monotonic() - t0, 2)
        manifest["installer"] = "uv" if use_uv else "pip"
        shutil.rmtree(venv, ignore_errors=True)
        os.rename(staging, venv)  # a venv's bin/python works after a move; scripts are unused
        with open(done_marker, "w") as handle:
            handle.write(digest + "\n")
        manifest["reused"] = False
    check = IMPORT_CHECK.get(facts["framework"], "import numpy as m")
    run_logged([manifest["python_executable"], "-c", check + "; print(m.__version__)"],
               "import check %s" % name, tail)
    manifest["packages"] = frozen_packages(venv)
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="envs/<name>.yaml")
    parser.add_argument("--env-root", required=True, help="where venvs live")
    parser.add_argument("--installer", default="auto", choices=("auto", "uv", "pip"))
    parser.add_argument("--interpreters", default="{}", help="YAML/JSON mapping X.Y -> python")
    parser.add_argument("--lock", default=None, help="the machine-wide timing lock file")
    parser.add_argument("--out", required=True, help="the manifest to write")
    args = parser.parse_args(argv)
    tail = []
    started = datetime.datetime.now(datetime.timezone.utc).isoformat()
    # Env builds load the machine: never beside a timing job.
    with machine_lock(args.lock):
        try:
            manifest = build(args.spec, args.env_root, args.installer,
                             yaml.safe_load(args.interpreters) or {}, tail)
            manifest["status"], manifest["reason"] = "ok", ""
        except BuildError as exc:
            print("[tfspeed] env build failed: %s" % exc.reason, file=sys.stderr, flush=True)
            manifest = {"status": "failed", "reason": exc.reason, "spec_file": args.spec,
                        "log_tail": exc.log_tail or "\n".join(tail[-40:])}
    manifest["built_utc"] = started
    write_json(args.out, manifest)


if __name__ == "__main__":
    main()
