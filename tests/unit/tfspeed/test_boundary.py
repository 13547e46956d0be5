"""The boundary between the two packages under scripts/: tfspeed/ runs inside every framework env
(standard library and numpy only, Python 3.7+) and never imports the driver; driver/ runs on the
workflow's Python."""
import ast
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
# What a framework env does not have (or must not reach for).
FORBIDDEN = ("driver", "pandas", "scipy", "matplotlib", "jinja2", "yaml", "jsonschema",
             "snakemake", "openpyxl", "xlsxwriter", "statsmodels")

CHECK = r"""
import importlib, pkgutil, sys
FORBIDDEN = %r

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN:
            raise ImportError("tfspeed may not import " + name)
        return None

sys.meta_path.insert(0, Refuse())
sys.path.insert(0, %r)
import tfspeed
names = ["tfspeed." + m.name for m in pkgutil.walk_packages(tfspeed.__path__)]
names = [n for n in names] + ["tfspeed.backends." + m.name
                             for m in pkgutil.iter_modules([tfspeed.__path__[0] + "/backends"])]
for name in sorted(set(names)):
    importlib.import_module(name)
import run_cell
bad = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
assert not bad, bad
print(len(set(names)), "modules")
"""


def test_tfspeed_imports_with_stdlib_and_numpy_alone():
    out = subprocess.run([sys.executable, "-c", CHECK % (FORBIDDEN, str(SCRIPTS))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[0]) >= 10


def test_no_tfspeed_module_names_the_driver():
    """Also for imports inside functions, which an import-time check would not see."""
    for path in sorted((SCRIPTS / "tfspeed").rglob("*.py")) + [SCRIPTS / "run_cell.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path}: imports {name}"

