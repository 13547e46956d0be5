"""A model built by the user's own Python code (config `builder: my_model.py:build` or
`package.module:build`), the half of usermodels.py that finds, loads and calls it: the driver finds
the file and the function without importing it (the file's syntax tree), reads its text and hash,
and the text travels with the cell in its `spec`, so the env's Python imports the same code
wherever the cell runs; backends/kerasnet.py calls it. Standard library only.
"""
import ast
import hashlib
import os
import sys


class ModelError(ValueError):
    """A model or data description that cannot be built; `where` names the config key."""

    def __init__(self, where, message):
        super().__init__("%s: %s" % (where, message))
        self.where, self.message = where, message


def config_dirs():
    """Where a relative `builder` or data `file` is looked for: the folders of the config files
    named on Snakemake's command line (--configfile/--configfiles, Snakemake makes them absolute
    only after its own chdir to --directory, so a relative one is taken from the shell's $PWD),
    the last first; planned outside Snakemake (reference_docs.py, tests), the current folder and
    the repository's presets/ (the shipped presets' examples)."""
    argv, out, taking = sys.argv[1:], [], False
    start = os.environ.get("PWD") or os.getcwd()
    for arg in argv:
        if arg in ("--configfile", "--configfiles"):
            taking = True
            continue
        if arg.startswith("--configfile=") or arg.startswith("--configfiles="):
            arg, taking = arg.split("=", 1)[1], True
        elif arg.startswith("-"):
            taking = False
            continue
        if taking:
            out.append(os.path.dirname(os.path.join(start, arg)))
    if out:
        return list(reversed(out))
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [os.getcwd(), os.path.join(here, "presets")]


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _defined_names(where, path, source):
    """The top-level names a Python file defines (functions, classes, assignments, imports), from
    its syntax tree: nothing is imported or run on the driver side."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise ModelError(where, "%s line %s: syntax error: %s" % (path, exc.lineno, exc.msg)) \
            from None
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
    return names


def _find_module(module, bases):
    """(root folder, file) of a module name under one of `bases`, or None."""
    parts = module.split(".")
    for base in bases:
        for tail in (os.path.join(*parts) + ".py", os.path.join(*(parts + ["__init__.py"]))):
            path = os.path.join(base, tail)
            if os.path.isfile(path):
                return base, os.path.abspath(path)
    return None


def resolve_builder(where, text, bases=None):
    """A `builder` value ("my_model.py:build", "/abs/my_model.py:build" or "pkg.mod:build") as
    it travels with a cell: {"file", "function", "sha256", "source"} (and "module", "root" for a
    module name), or ModelError naming the key, the file and the function. Already resolved (a
    dict, as a cell's spec holds it): checked against its own hash."""
    if isinstance(text, dict):
        if text.get("source") is not None and _sha256(text["source"]) != text.get("sha256"):
            raise ModelError(where, "builder %s: its text does not match its hash"
                             % text.get("file"))
        return dict(text)
    if not isinstance(text, str) or text.count(":") < 1:
        raise ModelError(where, "a builder is 'file.py:function' or 'module:function', got %r"
                         % (text,))
    target, function = text.rsplit(":", 1)
    if not function.isidentifier():
        raise ModelError(where, "%r: %r is not a function name" % (text, function))
    bases = config_dirs() if bases is None else bases
    out = {"function": function}
    if target.endswith(".py") or os.sep in target or "/" in target:
        candidates = [target] if os.path.isabs(target) else \
            [os.path.join(b, target) for b in bases]
        found = [c for c in candidates if os.path.isfile(c)]
        if not found:
            raise ModelError(where, "builder file %s does not exist (looked in %s)"
                             % (target, ", ".join(os.path.dirname(c) or "." for c in candidates)))
        path = os.path.abspath(found[0])
    else:
        if not all(part.isidentifier() for part in target.split(".")):
            raise ModelError(where, "%r: %r is neither a .py file nor a module name"
                             % (text, target))
        located = _find_module(target, bases)
        out["module"] = target
        if located is None:  # installed in the envs, not beside the config: imported there
            out.update(file=None, sha256=None, source=None, root=None)
            return out
        out["root"], path = located
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    names = _defined_names(where, path, source)
    if function not in names:
        raise ModelError(where, "%s has no function %r (it defines: %s)"
                         % (path, function, ", ".join(sorted(set(names))) or "nothing"))
    out.update(file=path, sha256=_sha256(source), source=source)
    return out


class BuilderError(Exception):
    """A user's builder (or data function) failed in this env, or returned what the study cannot
    time: the cell is written as failed with this message, which names the file, the function,
    the env and the error's last line."""


def _module_name(builder):
    if builder.get("module"):
        return builder["module"]
    stem = os.path.splitext(os.path.basename(builder["file"]))[0]
    return stem if stem.isidentifier() and stem not in sys.modules else "tfspeed_user_" + \
        builder["sha256"][:12]


def load_builder(builder):
    """In the cell's process: the function a builder names. A file's travelling text is run as
    its module (what the study hashed, wherever the cell runs), with the file's folder on sys.path
    for the modules beside it; a module without a file found beside the config is imported from
    the env."""
    import importlib
    import types

    name = _module_name(builder)
    if builder.get("source") is None:
        module = importlib.import_module(name)
    elif getattr(sys.modules.get(name), "__tfspeed_sha256__", None) == builder["sha256"] \
            and sys.modules[name].__file__ == builder["file"]:
        module = sys.modules[name]
    else:
        folder = builder.get("root") or os.path.dirname(builder["file"])
        if os.path.isdir(folder) and folder not in sys.path:
            sys.path.insert(0, folder)
        module = types.ModuleType(name)
        module.__file__ = builder["file"]
        module.__tfspeed_sha256__ = builder["sha256"]
        sys.modules[name] = module
        try:
            exec(compile(builder["source"], builder["file"], "exec"), module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    function = getattr(module, builder["function"], None)
    if not callable(function):
        raise AttributeError("%s has no function %r" % (name, builder["function"]))
    return function


def error_line(exc, builder):
    """The error's last line, with the line of the builder's file it came from, and for a
    missing package its name."""
    import traceback

    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if missing:
        line = "needs the package %r, which this env does not have (%s)" % (
            missing.split(".")[0], line)
    at = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if builder.get("file") and os.path.abspath(frame.filename) == builder["file"]:
            at = frame.lineno
    return line + (" (%s line %d)" % (os.path.basename(builder["file"]), at) if at else "")


def call_builder(builder, args, where_text):
    """builder's function(*args), in this process; BuilderError naming the file, the function,
    the env and the error's last line where importing or calling it fails."""
    try:
        return load_builder(builder)(*args)
    except BuilderError:
        raise
    except Exception as exc:
        raise BuilderError("%s %s failed: %s" % (builder_name(builder), where_text,
                                                 error_line(exc, builder))) from exc


def builder_name(builder):
    """'my_model.py:build' for messages: the file's (or module's) name and the function."""
    where = builder.get("module") or os.path.basename(builder.get("file") or "?")
    return "%s:%s" % (where, builder["function"])
