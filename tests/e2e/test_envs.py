"""The venv builder: interpreters, hash-keyed reuse, hash locks, package sources, build plans, and
failures that name their cause."""
import functools
import http.server
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from helpers import REPO

from driver.study import envspec

TINY = """name: tiny
dependencies:
  - python=3.11
  - pip
  - pip:
      - numpy==1.26.4
"""


def build(spec, root, tmp_path, *extra):
    out = tmp_path / ("m-%s.json" % spec.stem)
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_env.py"), "--spec", str(spec),
                    "--env-root", str(root), "--out", str(out),
                    "--lock", str(tmp_path / "timing.lock"), *extra],
                   check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.read_text())


@pytest.fixture
def tiny(tmp_path):
    spec = tmp_path / "envs" / "tiny.yaml"
    spec.parent.mkdir()
    spec.write_text(TINY)
    return spec


def test_build_reuse_and_rebuild_on_change(tiny, tmp_path):
    root = tmp_path / "venvs"
    first = build(tiny, root, tmp_path)
    assert first["status"] == "ok", first
    assert first["packages"] == {"numpy": "1.26.4"} and first["python"].startswith("3.11.")
    # bytecode compiled at build time (uv writes none; PYTHONDONTWRITEBYTECODE stops the imports)
    pycs = list(Path(first["venv"]).glob("lib/python3.11/site-packages/numpy/__pycache__/*.pyc"))
    assert pycs and first["bytecode_s"] > 0
    again = build(tiny, root, tmp_path)
    assert again["reused"] and again["venv"] == first["venv"]
    tiny.write_text(TINY.replace("numpy==1.26.4", "numpy==1.26.3"))
    changed = build(tiny, root, tmp_path)
    assert changed["venv"] != first["venv"] and changed["packages"] == {"numpy": "1.26.3"}


def test_missing_interpreter_names_where_it_looked(tmp_path):
    spec = tmp_path / "old.yaml"
    spec.write_text(TINY.replace("python=3.11", "python=3.2"))
    manifest = build(spec, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "failed"
    assert "no Python 3.2 found" in manifest["reason"]
    assert "pyenv" in manifest["reason"] and "interpreters" in manifest["reason"]


def test_configured_interpreter_is_used(tiny, tmp_path):
    python311 = build(tiny, tmp_path / "v", tmp_path)["base_interpreter"]
    manifest = build(tiny, tmp_path / "v2", tmp_path, "--interpreters",
                     json.dumps({"3.11": python311}))
    assert manifest["base_interpreter"] == python311


@pytest.mark.parametrize("text, words", [
    ("dependencies: [python=3.7\n  - : :", ["not valid YAML", "bad.yaml"]),
    ("name: x\nchannels: []\n", ["bad.yaml", "not a conda environment file"]),
    (TINY.replace("numpy==1.26.4", "numpy>=1"), ["bad.yaml", "not pinned exactly"]),
    (TINY.replace("numpy==1.26.4", "numpy==0.0.1"), ["numpy==0.0.1"]),
])
def test_bad_spec_fails_with_its_cause(tmp_path, text, words):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    manifest = build(spec, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "failed"
    told = manifest["reason"] + manifest.get("log_tail", "")
    for word in words:
        assert word in told, told


def test_hash_lock_is_used_and_enforced(tiny, tmp_path):
    subprocess.run([sys.executable, str(REPO / "scripts" / "lock_envs.py"), "--env-dir",
                    str(tiny.parent)], check=True, timeout=300)
    lock = tiny.with_suffix(".lock.txt")
    assert "--hash=sha256:" in lock.read_text()
    manifest = build(tiny, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "ok" and manifest["locked"]
    # a lock whose hashes match no file of the package must stop the build
    lines = [line for line in lock.read_text().splitlines() if "--hash" not in line]
    lock.write_text("\n".join(lines).rstrip(" \\") + " \\\n    --hash=sha256:" + "0" * 64 + "\n")
    tampered = build(tiny, tmp_path / "venvs", tmp_path)
    assert tampered["status"] == "failed", tampered
    assert "hash" in (tampered["reason"] + tampered["log_tail"]).lower()


def test_lock_skips_envs_served_by_package_sources(tiny, tmp_path):
    """PyPI's hashes for torch are the CUDA build's: an env whose pin the config's package_sources
    serve is not locked (with the reason), and the others are."""
    served = tiny.parent / "served.yaml"
    served.write_text(TINY.replace("name: tiny", "name: served") + "      - torch==2.13.0\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"package_sources": {"find_links": [str(tmp_path)],
                                                          "packages": ["torch"]}}))
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "lock_envs.py"), "--env-dir",
                           str(tiny.parent), "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not locked served.yaml: torch" in proc.stdout
    assert not served.with_suffix(".lock.txt").exists()
    assert "--hash=sha256:" in tiny.with_suffix(".lock.txt").read_text()


# --- package sources: env files install anywhere; machine-local sources come from config ---------

TORCH = REPO / "envs" / "torch2.13.yaml"


def plan(spec, tmp_path, sources):
    """The builder's plan for `spec` (its --plan: nothing is installed), and what it logged."""
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_env.py"), "--plan",
                           "--spec", str(spec), "--env-root", str(tmp_path / "venvs"),
                           "--package-sources", json.dumps(sources)],
                          check=True, capture_output=True, text=True, timeout=120)
    return json.loads(proc.stdout), proc.stderr


def steps(planned):
    return dict((label, cmd) for label, cmd in planned["steps"])


@pytest.fixture
def index_server(tmp_path):
    """A real HTTP server on localhost standing in for a package index."""
    folder = tmp_path / "index"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/simple/" % server.server_address[1]
    server.shutdown()
    server.server_close()


def closed_port_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return "http://127.0.0.1:%d/simple/" % port


@pytest.mark.parametrize("layout", ["no sources", "configured folder missing"])
def test_torch_plan_on_a_machine_without_the_local_folder(tmp_path, layout):
    absent = tmp_path / "wheels"  # never created: this machine has no local wheel folder
    sources = {} if layout == "no sources" else {"find_links": [str(absent)], "packages": ["torch"]}
    planned, log = plan(TORCH, tmp_path, sources)
    told = json.dumps(planned["steps"]) + json.dumps(planned["files"])
    for word in ("--find-links", "--index-url", "--extra-index-url", "/opt/wheels", str(absent)):
        assert word not in told, (word, planned)
    install = planned["steps"][-1][1]
    assert install[install.index("-r") + 1] in planned["files"]  # the env file's pins, from PyPI
    requirements = planned["files"][install[install.index("-r") + 1]].splitlines()
    assert "torch==2.13.0" in requirements
    assert all(envspec._PIN.match(line) for line in requirements), requirements
    assert planned["env_hash"] == planned["spec_hash"]  # no source: the env file alone names it
    if layout == "configured folder missing":
        assert "no such folder" in log and str(absent) in log, log
        assert planned["package_sources"]["skipped"] == [
            "find_links %s: no such folder" % absent]


def test_torch_plan_with_the_local_folder_installs_torch_from_it(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    planned, _ = plan(TORCH, tmp_path, {"find_links": [str(wheels)], "packages": ["torch"]})
    by_label = steps(planned)
    sourced = by_label["install torch (package sources)"]
    assert sourced[sourced.index("--find-links") + 1] == str(wheels)
    assert sourced[-1] == "torch==2.13.0"
    rest = by_label["install torch2.13"]
    assert "--find-links" not in rest
    requirements = planned["files"][rest[rest.index("-r") + 1]]
    assert "torch" not in requirements and "numpy==" in requirements
    # the sources change what is installed (torch 2.13.0+cpu, not PyPI's CUDA build): a new venv
    assert planned["env_hash"] != planned["spec_hash"]
    assert planned["venv"].endswith("torch2.13-" + planned["env_hash"])
    without, _ = plan(TORCH, tmp_path, {})
    assert without["env_hash"] != planned["env_hash"]


def test_index_urls_are_used_when_they_answer_and_skipped_when_not(tmp_path, index_server):
    dead = closed_port_url()
    planned, log = plan(TORCH, tmp_path, {"extra_index_urls": [dead, index_server],
                                          "packages": ["torch"]})
    sourced = steps(planned)["install torch (package sources)"]
    assert sourced[sourced.index("--extra-index-url") + 1] == index_server
    assert dead not in json.dumps(planned["steps"])
    assert dead in log and "does not answer" in log, log
    assert planned["package_sources"]["extra_index_urls"] == [index_server]


def test_sources_for_torch_leave_other_envs_as_they_were(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    spec = REPO / "envs" / "tf2.21.yaml"
    planned, log = plan(spec, tmp_path, {"find_links": [str(wheels)], "packages": ["torch"]})
    assert "--find-links" not in json.dumps(planned["steps"]) and not log
    assert planned["env_hash"] == planned["spec_hash"]  # its venv is reused, not rebuilt
    everywhere, _ = plan(spec, tmp_path, {"find_links": [str(wheels)]})  # packages: [] = every env
    install = everywhere["steps"][-1][1]
    assert install[install.index("--find-links") + 1] == str(wheels)


def test_env_files_hold_no_path_of_one_machine():
    for path in sorted((REPO / "envs").glob("*.yaml")):
        facts = envspec.parse_spec(path.stem, yaml.safe_load(path.read_text()), str(path))
        for line in facts["pip_options"]:
            assert not envspec._machine_path(line), (path, line)


@pytest.mark.parametrize("line, named", [
    ("--find-links /opt/wheels", "/opt/wheels"),
    ("--find-links=wheels", "wheels"),
    ("-f file:///srv/wheels", "file:///srv/wheels"),
    ("--extra-index-url ~/mirror", "~/mirror"),
    ("-c /home/me/constraints.txt", "/home/me/constraints.txt"),
])
def test_machine_path_in_an_env_file_is_refused_with_the_way_out(line, named):
    doc = {"dependencies": ["python=3.11", "pip", {"pip": [line, "torch==2.13.0"]}]}
    with pytest.raises(envspec.SpecError) as err:
        envspec.parse_spec("local", doc, "envs/local.yaml")
    for word in ("envs/local.yaml", named, "package_sources"):
        assert word in str(err.value)
    ok = {"dependencies": ["python=3.11", "pip", {"pip": [
        "--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0"]}]}
    assert envspec.parse_spec("url", ok)["pip_options"] == [
        "--extra-index-url https://download.pytorch.org/whl/cpu"]


def test_build_with_a_package_source_records_what_it_used(tiny, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()  # an empty folder: numpy still comes from PyPI, through the sourced step
    sources = {"find_links": [str(wheels), str(tmp_path / "absent")], "packages": ["numpy"]}
    manifest = build(tiny, tmp_path / "venvs", tmp_path, "--package-sources", json.dumps(sources))
    assert manifest["status"] == "ok", manifest
    assert manifest["packages"] == {"numpy": "1.26.4"} and manifest["resolved"] == {}
    used = manifest["package_sources"]
    assert used["find_links"] == [str(wheels)] and used["packages"] == ["numpy"]
    assert used["skipped"] == ["find_links %s: no such folder" % (tmp_path / "absent")]
    assert manifest["env_hash"] != manifest["spec_hash"]
    assert manifest["venv"].endswith("tiny-" + manifest["env_hash"])
