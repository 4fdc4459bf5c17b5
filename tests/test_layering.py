"""The package's layers (docs/architecture.md): a module may import from its own layer and the layers below, never
from a layer above. Checked twice: in the source (every import statement, those inside functions included), and by
importing each part of the package in a fresh interpreter and looking at what got loaded."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import ganforge

PACKAGE = Path(ganforge.__file__).parent

# Lowest first. A name is a top-level module or subpackage of ganforge; "" is the package root (its __version__).
LAYERS = (
    ("", "errors", "urls", "numerics", "durable", "tensorfile", "digest", "option", "config", "presets", "families",
     "limits", "outputs", "devices", "progress", "allocator", "metric_names", "stat_names", "projected", "memory",
     "events"),
    ("dist", "preempt"),
    ("nets", "augment", "data", "checkpoint", "monitor"),
    ("snapshot", "compare"),
    ("interop", "metrics", "report", "track"),
    ("train",),
    ("doctor", "generate", "export", "project"),
    ("bench", "explore", "api", "sweep"),
    ("cli", "demo", "__main__"),
)  # fmt: skip
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}
# Parts above `train` that still may not use it: `doctor`, `generate`, `export` and `project` stand on the layers
# below it, `bench` uses only what makes and runs the training step it times, `sweep` only train's options.
TRAIN_MODULES_ALLOWED = {
    "doctor": set(), "generate": set(), "export": set(), "project": set(), "explore": set(),
    "bench": {"ganforge.train.options", "ganforge.train.resolver", "ganforge.train.build", "ganforge.train.phases",
              "ganforge.train.schedules", "ganforge.train.precision", "ganforge.train.step_memory"},
    "sweep": {"ganforge.train.options"},  # its trials are `ganforge train` processes: it reads only the options
}  # fmt: skip


def _part(module: str) -> str:
    """ganforge.train.loop -> train; ganforge -> "" (the root)."""
    names = module.split(".")
    assert names[0] == "ganforge", module
    return names[1] if len(names) > 1 else ""


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    names = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(names)


def _imported(path: Path) -> set[str]:
    """Every ganforge module an import statement in `path` names (`from ganforge import dist` names ganforge.dist)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "ganforge"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "ganforge":
            if node.module == "ganforge":  # a submodule, or a name defined in the root (__version__)
                found |= {f"ganforge.{a.name}" if a.name in LAYER_OF else "ganforge" for a in node.names}
            else:
                found.add(node.module)
    return found


def _upward(importer: str, imported: set[str]) -> list[str]:
    level = LAYER_OF[_part(importer)]
    return [f"{importer} -> {name}" for name in sorted(imported) if LAYER_OF[_part(name)] > level]


def test_every_part_of_the_package_has_a_layer():
    parts = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()}
    parts = {part for part in parts if not part.startswith((".", "__pycache__")) and part not in ("py", "__init__")}
    parts = {part for part in parts if (PACKAGE / part).is_dir() or (PACKAGE / f"{part}.py").is_file()}
    assert parts <= set(LAYER_OF), sorted(parts - set(LAYER_OF))


def _train_imports(importer: str, imported: set[str]) -> list[str]:
    allowed = TRAIN_MODULES_ALLOWED.get(_part(importer))
    if allowed is None:
        return []
    return [f"{importer} -> {name}" for name in sorted(imported) if _part(name) == "train" and name not in allowed]


def test_doctor_generate_export_use_nothing_of_train_and_bench_only_the_step():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += _train_imports(_module_name(path), _imported(path))
    assert not found, found


# The package root re-exports the Python API (`ganforge.load`) by importing it on first use (a module __getattr__):
# the one import that runs upward, never at `import ganforge` (the fresh-interpreter test below checks that).
ROOT_REEXPORTS = {"ganforge": {"ganforge.api"}}


def test_no_import_statement_reaches_a_higher_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        upward += _upward(importer, _imported(path) - ROOT_REEXPORTS.get(importer, set()))
    assert not upward, upward


def test_import_ganforge_loads_no_part_of_it():
    code = "import ganforge, sys; print(sorted(m for m in sys.modules if m.startswith('ganforge.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


_LOADED = """
import importlib, json, pkgutil, sys
import ganforge

loaded = {}
for part in json.loads(sys.argv[1]):
    for name in [m for m in sys.modules if m == "ganforge" or m.startswith("ganforge.")]:
        del sys.modules[name]
    package = importlib.import_module(f"ganforge.{part}")
    names = [package.__name__]
    if hasattr(package, "__path__"):
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"ganforge.{part}.")]
    for name in names:
        importlib.import_module(name)
    loaded[part] = sorted(m for m in sys.modules if m.startswith("ganforge."))
print(json.dumps(loaded))
"""


def test_importing_each_part_alone_loads_nothing_from_a_higher_layer():
    """Each part is imported with no ganforge module loaded before it (one interpreter, its ganforge modules dropped
    between parts; torch and the other libraries stay loaded, which keeps this fast)."""
    parts = [part for part in LAYER_OF if part not in ("", "__main__")]  # __main__ runs the CLI when imported
    out = subprocess.run([sys.executable, "-c", _LOADED, json.dumps(parts)], capture_output=True, text=True,
                         check=True, timeout=300).stdout  # fmt: skip
    loaded = json.loads(out.splitlines()[-1])
    upward = [problem for part in parts for problem in _upward(f"ganforge.{part}", set(loaded[part]))]
    assert not upward, upward
    assert "ganforge.train.precision" not in loaded["metrics"]  # fp32_math lives on the ground floor


def test_the_command_line_loads_without_torch_or_numpy():
    """`ganforge --help` and every command's help read only declarations: torch (a second of the ~1.6 s each
    `ganforge` call took) and numpy load when a command runs (generate's edit checks once pulled both in)."""
    script = "import sys, ganforge.cli; print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
