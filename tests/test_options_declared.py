"""Each option is declared once. The train command's options are exactly the declarations (on the Config fields,
plus --clip-grad and --dry-run), bench takes train's own declarations for the options it shares, every other command's
options are exactly its declarations, no command lists a flag twice, no two declarations of train and bench make the
same flag (however it is spelled: given, or derived from the field's name), nowhere in the package is a train flag
declared again (a click.option, or a second Option of it), and no option anywhere is a hand-written click.option: every
one is derived from a declaration (cli/declared.py). The other commands' flags of train's names (--seed, --device,
--batch, ...) are their own options, declared with their commands."""

import ast
from pathlib import Path

import click

import ganforge
from cli_helpers import leaf_commands
from ganforge.bench.options import BENCH_OPTIONS, TRAINING
from ganforge.cli import main
from ganforge.compare.options import DIFF_OPTIONS
from ganforge.data.options import BUILD_OPTIONS, INFO_OPTIONS, VERIFY_OPTIONS
from ganforge.doctor.options import DOCTOR_OPTIONS
from ganforge.explore.options import EXPLORE_OPTIONS
from ganforge.export.options import EXPORT_OPTIONS
from ganforge.generate.options import GENERATE_OPTIONS
from ganforge.interop.options import IMPORT_OPTIONS
from ganforge.metrics.options import METRICS_OPTIONS
from ganforge.project.options import PROJECT_OPTIONS
from ganforge.report.options import REPORT_OPTIONS
from ganforge.sweep.options import SWEEP_OPTIONS
from ganforge.train.options import TRAIN_OPTIONS

PACKAGE = Path(ganforge.__file__).parent
# The declarations each command's options are made from (cli/declared.py).
TRAIN_FAMILY = {"train": TRAIN_OPTIONS, "bench": BENCH_OPTIONS, "sweep": SWEEP_OPTIONS}
COMMAND_DECLARATIONS = TRAIN_FAMILY | {
    "generate": GENERATE_OPTIONS,
    "export": EXPORT_OPTIONS,
    "project": PROJECT_OPTIONS,
    "metrics": METRICS_OPTIONS,
    "dataset build": BUILD_OPTIONS,
    "dataset info": INFO_OPTIONS,
    "dataset verify": VERIFY_OPTIONS,
    "explore": EXPLORE_OPTIONS,
    "doctor": DOCTOR_OPTIONS,
    "report": REPORT_OPTIONS,
    "checkpoint diff": DIFF_OPTIONS,
    "import": IMPORT_OPTIONS,
}
# Where the commands other than train and bench declare their options.
OTHER_COMMANDS_MODULES = (
    "generate/options.py",
    "export/options.py",
    "project/options.py",
    "metrics/options.py",
    "data/options.py",
    "explore/options.py",
    "doctor/options.py",
    "report/options.py",
    "compare/options.py",
    "interop/options.py",
)
# bench's own options under train's flags, each a different option: its --aug-p has another default (every transform
# on), its --data is optional (it only shapes the synthetic images) and its --batch-gpu also takes auto (the search
# for the batch to train with).
BENCH_OWN = {"--aug-p", "--data", "--batch-gpu"}
SWEEP_OWN = {"--outdir"}  # the sweep's folder, whose trials/ holds the trials' OUTDIRs


def test_the_train_command_has_exactly_the_declared_options():
    params = [p.name for p in main.commands["train"].params]
    assert params == [d.name for d in TRAIN_OPTIONS]


def test_the_other_commands_have_exactly_their_declared_options():
    commands = leaf_commands()
    for name, options in COMMAND_DECLARATIONS.items():
        flags = [p.opts[0] for p in commands[name].params if p.opts[0].startswith("--")]
        declared_flags = [d.flag for d in options]
        assert flags[: len(declared_flags)] == declared_flags, name


def test_bench_shares_trains_declarations_themselves():
    shared = [d for d in BENCH_OPTIONS if d.name in TRAINING]
    assert [d.name for d in shared] == [d.name for d in TRAIN_OPTIONS if d.name in TRAINING]
    assert all(any(d is t for t in TRAIN_OPTIONS) for d in shared)


def test_no_command_lists_a_flag_twice():
    for name, command in leaf_commands().items():
        flags = [flag for param in command.params for flag in getattr(param, "opts", []) if flag.startswith("--")]
        assert len(flags) == len(set(flags)), (name, sorted(f for f in flags if flags.count(f) > 1))


def test_every_command_made_from_declarations_is_checked():
    made = {
        name: set(command.callback.__declared_sections__)
        for name, command in leaf_commands().items()
        if hasattr(command.callback, "__declared_sections__")
    }
    assert made == {name: {d.name for d in options} for name, options in COMMAND_DECLARATIONS.items()}


def test_no_two_declarations_make_one_flag():
    """A flag is one declaration, the same object wherever a command takes it (bench takes train's shared options
    themselves), whether its flag is written out or derived from the field's name: a `gamma` field on BenchOptions
    would declare a second --gamma without spelling it."""
    places: dict[str, dict[int, str]] = {}
    for command, options in TRAIN_FAMILY.items():
        for d in options:
            places.setdefault(d.flag, {}).setdefault(id(d), f"{command}: {d.path or d.flag}")
    twice = {flag: list(where.values()) for flag, where in places.items() if len(where) > 1}
    assert not {flag: where for flag, where in twice.items() if flag not in BENCH_OWN | SWEEP_OWN}, twice
    assert twice.keys() == BENCH_OWN | SWEEP_OWN, "an exception that is no longer needed: drop it from its set"


def _declared_flags(path: Path) -> list[tuple[str, str]]:
    """(kind, flag) for every string given to a click.option ("click") or a declaration (`option`/`Option`), and for
    every field declared with `option(...)` without a `flag`, the flag derived from its name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        field = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_call(node.value, "option")
        if field and not any(kw.arg == "flag" for kw in node.value.keywords):
            found.append(("declared", "--" + node.target.id.replace("_", "-")))
        if not (_is_call(node, "option") or _is_call(node, "Option")):
            continue
        callee = node.func
        is_click = isinstance(callee, ast.Attribute) and getattr(callee.value, "id", "") == "click"
        kind = "click" if is_click else "declared"
        values = [*node.args, *(kw.value for kw in node.keywords if kw.arg == "flag")]
        found += [(kind, v.value) for v in values if isinstance(v, ast.Constant) and str(v.value).startswith("--")]
    return found


def _is_call(node, name: str) -> bool:
    """Is `node` a call of `name` (plain or as an attribute, as in `click.option`)?"""
    callee = getattr(node, "func", None)
    return isinstance(node, ast.Call) and getattr(callee, "attr", getattr(callee, "id", None)) == name


def test_no_train_flag_is_declared_a_second_time():
    """train's options and those bench shares with it have one declaration; bench's own BENCH_OWN are different
    options. Other commands' flags of the same name (--seed, --workers, ...) are their own options."""
    train_flags = {d.flag for d in TRAIN_OPTIONS}
    found = []
    for relative in ("cli/train.py", "cli/bench.py"):
        found += [f"{relative}: {flag}" for kind, flag in _declared_flags(PACKAGE / relative) if flag in train_flags]
    own = {("bench/options.py", flag) for flag in BENCH_OWN} | {("sweep/options.py", flag) for flag in SWEEP_OWN}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in ("config/sections.py", "train/options.py", *OTHER_COMMANDS_MODULES):
            continue
        flags = [flag for kind, flag in _declared_flags(path) if kind == "declared" and flag in train_flags]
        found += [f"{relative}: {flag}" for flag in flags if (relative, flag) not in own]
    assert not found, found


def test_no_option_is_a_hand_written_click_option():
    """Every option of every command is derived from its declaration: the one click.option of the package is the
    derivation's own (cli/declared.py)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative != "cli/declared.py":
            found += [f"{relative}: line {line}" for line in _click_option_calls(path)]
    assert not found, found


def _click_option_calls(path: Path) -> list[int]:
    """The lines of `path` that call click.option (or click.Option), whatever their flags are spelled with."""
    nodes = ast.walk(ast.parse(path.read_text()))
    calls = [n for n in nodes if _is_call(n, "option") or _is_call(n, "Option")]
    return [n.lineno for n in calls if isinstance(n.func, ast.Attribute) and getattr(n.func.value, "id", "") == "click"]


def test_every_command_is_made_from_declarations():
    """Each command whose options are all derived lists them in its declarations: a command with an option outside
    COMMAND_DECLARATIONS (other than --help) would be one not derived."""
    for name, command in leaf_commands().items():
        options = [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]
        if name == "train":
            assert [p.name for p in options] == [d.name for d in TRAIN_OPTIONS]
        elif options:
            assert name in COMMAND_DECLARATIONS, name
