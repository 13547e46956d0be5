"""What an env file says about the cells it can run: read from its pins, so that adding a TF version is
adding one file under envs/ and nothing else. Driver side: the Snakemake side passes parsed YAML in.
"""
import hashlib
import re

from tfspeed import frameworks
from tfspeed.versions import version_tuple

_PIN = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*==\s*([^\s;#]+)")
TF_PACKAGES = frameworks.get("tensorflow").packages


class SpecError(ValueError):
    """An env file that is not a usable env spec; the message names the file and the cause."""


def spec_hash(text):
    """Hash of the env file's bytes: a changed file builds a new env, an unchanged one is reused."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_SOURCE_OPTIONS = ("-f", "--find-links", "-i", "--index-url", "--extra-index-url")


def _machine_path(line):
    """The local path an installer option line names (an env file must not), or None.

    Package-source options may name URLs only (https://...); no option may name an absolute path,
    a home folder or a file: URL.
    """
    words = line.replace("=", " ").split()
    for i, word in enumerate(words):
        if word.startswith(("/", "~", "file:")) or re.match(r"^[A-Za-z]:[\\/]", word):
            return word
        if i and words[i - 1] in _SOURCE_OPTIONS and not re.match(r"^https?://", word):
            return word
    return None


def parse_spec(name, doc, path="envs/%s.yaml"):
    """Turn a parsed conda env file into the facts the workflow needs.

    Raises SpecError naming the file when it lacks a pinned python or a pip section, or pins loosely.
    """
    where = path % name if "%s" in path else path
    if not isinstance(doc, dict) or not isinstance(doc.get("dependencies"), list):
        raise SpecError("%s: not a conda environment file (no 'dependencies:' list)" % where)
    python = None
    pip_lines = []
    conda_pkgs = []
    for dep in doc["dependencies"]:
        if isinstance(dep, dict) and "pip" in dep:
            if not isinstance(dep["pip"], list):
                raise SpecError("%s: 'pip:' must be a list of requirement lines" % where)
            pip_lines = [str(x) for x in dep["pip"]]
        elif isinstance(dep, str):
            match = re.match(r"^python\s*=+\s*(\d+\.\d+)(\.\d+)?\s*$", dep)
            if match:
                python = match.group(1)
            elif dep.split("=")[0].strip() not in ("pip", "python"):
                conda_pkgs.append(dep)
        else:
            raise SpecError("%s: unreadable dependency entry %r" % (where, dep))
    if python is None:
        raise SpecError("%s: no pinned 'python=X.Y' in dependencies" % where)
    if not pip_lines:
        raise SpecError("%s: no 'pip:' section with pinned packages" % where)
    pins = {}
    extras = set()
    options = []
    for line in pip_lines:
        if line.startswith("-"):
            machine_path = _machine_path(line)
            if machine_path:
                raise SpecError(
                    "%s: pip line %r names %s, a path of one machine: an env file must install "
                    "anywhere. Put machine-local package sources in config `package_sources` "
                    "(find_links, extra_index_urls), applied where they exist"
                    % (where, line, machine_path))
            options.append(line)  # --extra-index-url and friends, passed through to the installer
            continue
        match = _PIN.match(line)
        if not match:
            raise SpecError("%s: pip line %r is not pinned exactly (use name==version)" % (where, line))
        pins[match.group(1).lower().replace("_", "-")] = match.group(3)
        if match.group(2):
            extras.update(x.strip() for x in match.group(2).strip("[]").split(","))
    variables = doc.get("variables") or {}
    if not isinstance(variables, dict):
        raise SpecError("%s: 'variables:' must be a mapping" % where)
    return describe(name, python, pins, options, conda_pkgs,
                    {str(k): str(v) for k, v in variables.items()}, extras)


def describe(name, python, pins, options, conda_pkgs, variables, extras=()):
    framework, package = frameworks.pinned(pins)  # the catalogue's pin hints, in its order
    gpu = ("tensorflow-gpu" in pins or "and-cuda" in extras
           or any(p.startswith("nvidia-") for p in pins)
           or any(c.split("=")[0] in ("cudatoolkit", "cudnn", "cuda-toolkit") for c in conda_pkgs))
    facts = {
        "name": name, "python": python, "pins": pins, "pip_options": options,
        "conda_packages": conda_pkgs, "variables": variables, "build": "gpu" if gpu else "cpu",
        "framework": None, "framework_version": None, "flavours": [],
    }
    keras = pins.get("keras")
    if framework == "tensorflow":
        tfv = version_tuple(pins[package])
        facts["framework"], facts["framework_version"] = "tensorflow", pins[package]
        flavours = []
        if keras and version_tuple(keras) < (2, 4):
            flavours.append("keras")  # standalone multi-backend Keras (2.2.5, 2.3.1)
        if tfv < (2, 16):
            flavours += ["tf.keras", "tf.python.keras"]
        else:
            flavours.append("keras3")  # tf.keras is Keras 3 from TF 2.16 on
        if "tf-keras" in pins:
            flavours.append("tf_keras")
        facts["flavours"] = flavours
    elif keras and version_tuple(keras) >= (3,):
        backend = variables.get("KERAS_BACKEND", "tensorflow")
        facts["framework"] = backend
        facts["framework_version"] = pins.get(backend, pins.get("jax", keras))
        facts["flavours"] = ["keras3"]
    elif framework:
        facts["framework"], facts["framework_version"] = framework, pins[package]
        facts["flavours"] = ["none"]
    return facts


def _normalized(name):
    """A package name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def unpinned_packages(packages, specs):
    """The names in config `package_sources.packages` that no env file pins (a typo there would
    otherwise pass silently, and the pin it meant would install from PyPI)."""
    pinned = {_normalized(p) for spec in specs.values() for p in (spec.get("pins") or {})}
    return [p for p in packages or [] if _normalized(p) not in pinned]
