"""`make doctor` (scripts/doctor.py) names a missing interpreter with the command that installs it
and exits non-zero; with every interpreter present it passes. Run as a real subprocess with a
planted PATH, HOME and PYENV_ROOT: a fake pyenv whose versions are links to this machine's own
interpreters (found by the builder's code), one of them left out. What only the tests need
(Chromium, SLURM) fails `make doctor-tests`, never `make doctor`; `make help` puts every target in
exactly one group, and the README names the users' group only."""
import os
import subprocess
import sys
from pathlib import Path

import doctor
import pytest
import yaml
from build_env import BuildError, find_interpreter

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "doctor.py"
# two envs of the default study with different Pythons: one to leave out, one to keep
ENVS = ["tf1.14", "tf2.21"]


def pinned(env):
    deps = yaml.safe_load((REPO / "envs" / (env + ".yaml")).read_text())["dependencies"]
    return next(d.split("=")[1] for d in deps if isinstance(d, str) and d.startswith("python="))


def real_interpreter(minor):
    """This machine's Python X.Y as a real file (not a pyenv shim, which needs the real PYENV_ROOT),
    or None."""
    try:
        exe, _ = find_interpreter(minor, {})
    except BuildError:
        return None
    out = subprocess.run([exe, "-c", "import sys; print(sys.executable)"], capture_output=True,
                         text=True, timeout=30)
    return os.path.realpath(out.stdout.strip()) if out.returncode == 0 else None


def in_system_folders(minor):
    """The builder also looks in fixed system folders, which a planted PATH cannot hide."""
    return any(os.path.exists(os.path.join(d, "python" + minor))
               for d in ("/usr/local/bin", "/usr/bin", "/opt/homebrew/bin"))


@pytest.fixture(scope="module")
def pythons():
    found = {pinned(env): real_interpreter(pinned(env)) for env in ENVS}
    if not all(found.values()):
        pytest.skip("this machine lacks one of %s" % sorted(found))
    hideable = [m for m in found if not in_system_folders(m)]
    if not hideable:
        pytest.skip("every Python of %s is in a system folder: none can be hidden" % ENVS)
    return found, hideable[0]


def run_doctor(tmp_path, pythons, leave_out=None):
    """The doctor in a planted world: an empty PATH folder, a HOME of its own (no ~/.pyenv, no
    conda, no uv-managed Pythons) and a fake pyenv holding every Python but `leave_out`."""
    root = tmp_path / "pyenv"
    for minor, exe in pythons.items():
        if minor == leave_out:
            continue
        version = subprocess.run([exe, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        folder = root / "versions" / version / "bin"
        folder.mkdir(parents=True)
        (folder / "python").symlink_to(exe)
    (root / "versions").mkdir(parents=True, exist_ok=True)
    home, path_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    path_dir.mkdir()
    config = tmp_path / "doctor.yaml"
    config.write_text(yaml.safe_dump({"envs": ENVS, "env_root": str(tmp_path / "envs")}))
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("UV_", "PYENV", "CONDA", "VIRTUAL_ENV", "XDG_", "PYTHON"))}
    env = dict(keep, HOME=str(home), PYENV_ROOT=str(root), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               PATH=os.pathsep.join([str(path_dir), "/usr/bin", "/bin"]))
    return subprocess.run([sys.executable, str(SCRIPT), "--for", "study", "--", "--configfile",
                           str(config)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_missing_interpreter_is_named_with_its_install_command(tmp_path, pythons):
    found, missing = pythons
    proc = run_doctor(tmp_path, found, leave_out=missing)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    line = next((x for x in proc.stderr.splitlines() if "MISSING" in x and "Python %s" % missing in x),
                None)
    assert line, proc.stderr
    assert ("python install %s" % missing) in line or ("pyenv install %s" % missing) in line, line
    users = [e for e in ENVS if pinned(e) == missing]
    assert all(e in line for e in users), line
    kept = [m for m in found if m != missing]
    assert all("ok: Python %s" % m in proc.stdout for m in kept), proc.stdout


def test_with_every_interpreter_present_it_passes(tmp_path, pythons):
    found, _ = pythons
    proc = run_doctor(tmp_path, found)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for minor in found:
        assert "ok: Python %s" % minor in proc.stdout
    assert "MISSING" not in proc.stderr


def test_snakemake_arguments_that_change_the_plan_are_read():
    files, overrides, conda = doctor.snakemake_options(
        ["--cores", "2", "--configfile", "a.yaml", "b.yaml", "--config", "envs=[tf1.14]",
         "twins=0", "--sdm", "conda", "-n"])
    assert files == ["a.yaml", "b.yaml"] and overrides == {"envs": ["tf1.14"], "twins": 0} and conda
    assert doctor.snakemake_options(["--configfile=c.yaml"]) == (["c.yaml"], {}, False)


def test_the_planned_envs_follow_the_config():
    default = doctor.planned_envs(doctor.load_config())
    assert "tf1.14" in default and not any(s["build"] == "gpu" for s in default.values())
    chosen = doctor.planned_envs(doctor.load_config(overrides={"envs": ["tf2.21"]}))
    assert list(chosen) == ["tf2.21"]


def test_make_study_runs_the_doctor_first():
    lines = (REPO / "Makefile").read_text().split("\nstudy:", 1)[1].splitlines()
    recipe = [x.strip() for x in lines[1:] if x.startswith("\t")]
    assert "doctor.py --for study" in recipe[0] and "$(SNAKEMAKE)" in recipe[1], recipe


def test_an_env_counts_as_built_by_its_own_venv_only(tmp_path):
    exe = tmp_path / "tf1.15-gpu-0123456789abcdef" / "bin" / "python"
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    assert not doctor.built(str(tmp_path), "tf1.15") and doctor.built(str(tmp_path), "tf1.15-gpu")


def test_too_little_disk_is_missing_with_what_to_do(tmp_path, monkeypatch):
    envs = doctor.planned_envs(doctor.load_config(overrides={"envs": ["tf2.21"]}))
    monkeypatch.setitem(doctor.DISK_NEED, "gib_per_env", 1e9)
    missing, ok = doctor.check_disk(envs, str(tmp_path / "envs"))
    assert ok is None and "1 of 1 envs to build" in missing[0] and "env_root" in missing[0]
    assert doctor.DISK_NEED["note"] in missing[0]
    assert (REPO / doctor.DISK_NEED["note"]).exists(), "the measured need cites its run note"


def test_what_only_the_tests_need_is_information_for_the_study(monkeypatch, capsys):
    """A machine ready for make study but without Chromium and SLURM: `make doctor` (--for study)
    exits 0 and names them as information; `make doctor-tests` (--for test) exits 1 on them."""
    monkeypatch.setattr(doctor, "study_checks", lambda rest: [([], "platform Linux x86_64")])
    monkeypatch.setattr(doctor, "check_platform", lambda: ([], "platform Linux x86_64"))
    monkeypatch.setattr(doctor, "check_test_tools",
                        lambda: (["chromium: not at /usr/bin/chromium", "SLURM: sbatch not found"], []))
    assert doctor.main(["--for", "study"]) == 0
    out = capsys.readouterr()
    assert "MISSING" not in out.err and "for make test only: chromium" in out.out
    assert "make doctor-tests" in out.out
    assert doctor.main([]) == 0, "make doctor checks the study by default"
    capsys.readouterr()
    assert doctor.main(["--for", "test"]) == 1
    err = capsys.readouterr().err
    assert "MISSING for make test: chromium" in err and "MISSING for make test: SLURM" in err


def test_make_doctor_fails_only_on_what_the_study_needs(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "study_checks", lambda rest: [(["Python 3.7: not found"], None)])
    monkeypatch.setattr(doctor, "check_test_tools", lambda: ([], ["chromium: /usr/bin/chromium"]))
    assert doctor.main(["--for", "study", "--", "--configfile", "tests/quick.yaml"]) == 1
    assert "MISSING for make study: Python 3.7" in capsys.readouterr().err


def test_the_make_targets_call_the_doctor_for_their_own_part():
    text = (REPO / "Makefile").read_text()
    recipe = {name: text.split("\n%s:" % name, 1)[1].splitlines()[1].strip()
              for name in ("doctor", "doctor-tests")}
    assert "doctor.py --for study -- $(ARGS)" in recipe["doctor"], recipe
    assert "doctor.py --for test" in recipe["doctor-tests"], recipe


def help_groups():
    """{group heading: [targets]} as `make help` prints them."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    groups, heading = {}, None
    for line in out.stdout.splitlines():
        if line.startswith("  make "):
            groups.setdefault(heading, []).append(line.split()[1])
        elif line.strip():
            heading = line.strip()
    return groups


def test_make_help_puts_every_target_in_exactly_one_group():
    import re
    text = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", text, re.M))
    phony = set(re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split())
    groups = help_groups()
    assert None not in groups, "a target printed before any group heading"
    assert [g.split()[0] for g in groups] == ["For", "For", "Research"], list(groups)
    listed = [t for names in groups.values() for t in names]
    assert sorted(listed) == sorted(targets) == sorted(phony), (
        "in no group or in two: %s" % sorted(set(targets).symmetric_difference(listed) |
                                             {t for t in listed if listed.count(t) > 1}))
    users = groups[next(g for g in groups if g.startswith("For users"))]
    assert {"doctor", "quick", "study", "own", "publish", "compare-runs", "retry-failed",
            "unlock"} <= set(users)


def test_the_readme_names_only_the_users_targets():
    import re
    text = (REPO / "README.md").read_text()
    block = re.compile(r"<!-- answer:.*?<!-- /answer -->", re.S)
    named = set(re.findall(r"\bmake ([a-z][a-z-]*)", block.sub("", text)))
    groups = help_groups()
    users = set(groups[next(g for g in groups if g.startswith("For users"))])
    # and the test command, which CI runs as the README gives it (.ci/run)
    assert "test" in named and "make test" in (REPO / ".ci" / "run").read_text()
    named -= {"test"}
    assert named and named <= users, "README names targets outside the users' group: %s" % (
        sorted(named - users))
