"""Each option is declared once. The train command's options are exactly the declarations (on the Config fields,
plus --clip-grad and --dry-run), bench takes train's own declarations for the options it shares, no command lists a
flag twice, and nowhere in the package is a train flag declared again (a click.option, or a second Option of it)."""

import ast
from pathlib import Path

import ganforge
from cli_helpers import leaf_commands
from ganforge.bench.options import BENCH_OPTIONS, TRAINING
from ganforge.cli import main
from ganforge.train.options import TRAIN_OPTIONS

PACKAGE = Path(ganforge.__file__).parent
# Where options are declared: the Config sections, train's two own, and bench's own.
DECLARING = {"config/sections.py", "train/options.py", "bench/options.py"}


def test_the_train_command_has_exactly_the_declared_options():
    params = [p.name for p in main.commands["train"].params]
    assert params == [d.name for d in TRAIN_OPTIONS]


def test_bench_shares_trains_declarations_themselves():
    shared = [d for d in BENCH_OPTIONS if d.name in TRAINING]
    assert [d.name for d in shared] == [d.name for d in TRAIN_OPTIONS if d.name in TRAINING]
    assert all(any(d is t for t in TRAIN_OPTIONS) for d in shared)


def test_no_command_lists_a_flag_twice():
    for name, command in leaf_commands().items():
        flags = [flag for param in command.params for flag in getattr(param, "opts", []) if flag.startswith("--")]
        assert len(flags) == len(set(flags)), (name, sorted(f for f in flags if flags.count(f) > 1))


def _declared_flags(path: Path) -> list[tuple[str, str]]:
    """(kind, flag) for every string given to a click.option ("click") or a declaration (`option`/`Option`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        callee = getattr(node, "func", None)
        name = getattr(callee, "attr", getattr(callee, "id", None))
        if not isinstance(node, ast.Call) or name not in ("option", "Option"):
            continue
        is_click = isinstance(callee, ast.Attribute) and getattr(callee.value, "id", "") == "click"
        kind = "click" if is_click else "declared"
        values = [*node.args, *(kw.value for kw in node.keywords if kw.arg == "flag")]
        found += [(kind, v.value) for v in values if isinstance(v, ast.Constant) and str(v.value).startswith("--")]
    return found


def test_no_train_flag_is_declared_a_second_time():
    """train's options and those bench shares with it have one declaration; bench's own --aug-p (another default:
    every transform on) and --data (optional: it only shapes the synthetic images) are different options. Other
    commands' flags of the same name (--seed, --workers, ...) are their own options."""
    train_flags = {d.flag for d in TRAIN_OPTIONS}
    found = []
    for relative in ("cli/train.py", "cli/bench.py"):
        found += [f"{relative}: {flag}" for kind, flag in _declared_flags(PACKAGE / relative) if flag in train_flags]
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in ("config/sections.py", "train/options.py"):
            continue
        own = {("bench/options.py", "--aug-p"), ("bench/options.py", "--data")}
        found += [f"{relative}: {flag}" for kind, flag in _declared_flags(path)
                  if kind == "declared" and flag in train_flags and (relative, flag) not in own]  # fmt: skip
    assert not found, found
