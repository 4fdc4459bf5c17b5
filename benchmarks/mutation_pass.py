"""Systematic mutation pass over ganforge's maths modules: every mutant a few operators make of a module, each run
against the test files that own that module (OWNERS), on a temporary copy of src/ and tests/ (mutation_check.py's
machinery: never this working tree; the copy, not the editable install, is what imports). Not part of `make test`.

The operators, applied one site at a time (docstrings, messages, annotations, asserts and raises left alone):
  arithmetic swap   + -  * /  // -> *  % -> //  ** -> *  (in expressions and augmented assignments)
  comparison swap   < <=  > >=  == !=  is / is not  in / not in
  constant          a number c -> c + 1, and c -> 0 (0 -> -1)
  negation removal  -x -> x, not x -> x
  argument swap     f(a, b, ...) -> f(b, a, ...) where a and b read differently

Why not cosmic-ray or mutmut: cosmic-ray 8.7 (installable here) makes about four times as many mutants of these
modules (loss.py 163, schedules.py 697, phases.py 511 against 39, 164, 162 here: every operator replaced by every
other, each number in several ways), mutates the module in place in the working tree, and starts a fresh test
process per mutant, which on 2 shared cores spends most of its time importing torch; mutmut 3 mutates strings too and
rewrites every function of a module into a dispatcher of its mutants. A pass must fit a few hours of 2 cores, so the
operators here are the few that change maths, and the tests run where torch is already imported.

The module is rewritten from its syntax tree (ast.unparse), so the baseline, which must pass before any mutant runs,
is the unparsed module unmutated. A mutant is killed when its tests fail, survives when they pass, and times out
after 4x the baseline's time (at least 2 minutes; reported apart: on a loaded machine, run them again). Each mutant's
tests run in a forked child of this process, which has imported torch once. Results are appended to a JSON-lines log
as they come, so a pass that was stopped continues where it was (--log, same file); the summary gives the counts, the
minutes of tests and every survivor's line, and with --rerun the verdicts of its survivors run again later.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/mutation_pass.py --count            # mutants per module, seconds
    OMP_NUM_THREADS=1 nohup .venv/bin/python benchmarks/mutation_pass.py --module train/loss.py \\
        --log /tmp/mutants-loss.jsonl > /tmp/mutants-loss.txt 2>&1 &
    .venv/bin/python benchmarks/mutation_pass.py --summary /tmp/mutants-loss.jsonl
"""

import argparse
import ast
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch  # noqa: F401  (imported once here, so that each mutant's forked test run starts without its import)

from mutation_check import ROOT, check_imports_copy, copy_tree

TRAIN, PROJECT, NETS, METRICS = "tests/train/", "tests/project/", "tests/nets/", "tests/metrics/"
# Module (under src/ganforge) -> the test files that own it, fastest first (pytest stops at the first failure).
OWNERS = {
    "train/loss.py": (TRAIN + "test_train_reference.py", TRAIN + "test_train_r3gan.py"),
    "train/relativistic.py": (TRAIN + "test_train_r3gan.py",),
    "train/schedules.py": (TRAIN + "test_train_schedules_consumed.py", TRAIN + "test_train_controls.py",
                           TRAIN + "test_train_schedule.py", TRAIN + "test_train_stylegan3.py",
                           TRAIN + "test_train_r3gan.py", TRAIN + "test_train_growth.py"),
    "train/phases.py": (TRAIN + "test_train_reference.py", TRAIN + "test_train_schedules_consumed.py",
                        TRAIN + "test_train_schedule.py", TRAIN + "test_train_controls.py",
                        TRAIN + "test_train_clipping.py", TRAIN + "test_train_numerics.py",
                        TRAIN + "test_train_stylegan3.py"),
    "augment/blur.py": (TRAIN + "test_train_stylegan3.py",),
    "augment/corrupt.py": (TRAIN + "test_diffaugment.py", TRAIN + "test_corrupt_reference.py"),
    "augment/diffaugment.py": (TRAIN + "test_diffaugment.py", TRAIN + "test_diffaugment_reference.py"),
    "augment/ops.py": (TRAIN + "test_augment_draws.py", TRAIN + "test_augment.py"),
    "augment/pipe.py": (TRAIN + "test_augment.py",),
    "nets/layers.py": (NETS + "test_nets_layers_arch.py", NETS + "test_nets_layers.py",
                       NETS + "test_nets_fir_derivatives.py", NETS + "test_nets_reference.py"),
    "project/search.py": (PROJECT + "test_project_parts.py", PROJECT + "test_project_terms.py",
                          PROJECT + "test_project.py"),
    "project/tune.py": (PROJECT + "test_project_terms.py", PROJECT + "test_project.py"),
    "metrics/fid.py": (METRICS + "test_metrics_fid.py",),
    "metrics/kid.py": (METRICS + "test_metrics_kid_pr.py", METRICS + "test_metrics_counts.py"),
    "metrics/pr.py": (METRICS + "test_metrics_kid_pr.py", METRICS + "test_metrics_counts.py"),
    "metrics/swd.py": (METRICS + "test_metrics_swd.py", METRICS + "test_metrics_nonsquare.py"),
    "metrics/inception_score.py": (METRICS + "test_metrics_is.py",),
    "metrics/ppl.py": (METRICS + "test_metrics_ppl.py", METRICS + "test_metrics_nonsquare.py"),
    "metrics/equivariance.py": (METRICS + "test_metrics_equivariance_draws.py",
                                METRICS + "test_metrics_equivariance.py"),
    "metrics/inception.py": (METRICS + "test_metrics_reference.py", METRICS + "test_metrics_inception.py"),
    "metrics/perceptual.py": (PROJECT + "test_project_parts.py",),
}  # fmt: skip

ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
              ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}  # fmt: skip
COMPARISON = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
              ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}  # fmt: skip


def _untouched(tree: ast.Module) -> set[int]:
    """ids of the nodes no mutant may change: docstrings, annotations, asserts, raises, f-strings, decorators."""
    skipped = set()

    def skip(node):
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assert, ast.Raise, ast.JoinedStr)):
            skip(node)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip(first)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                skip(decorator)
        if isinstance(node, ast.FunctionDef):
            skip(node.returns)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                skip(arg.annotation)
        if isinstance(node, ast.AnnAssign):
            skip(node.annotation)
    return skipped


def _sites(node: ast.AST) -> list[tuple[str, object]]:
    """The mutations of one node: (description, how) pairs; `how` is applied by `_mutate`."""
    out = []
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITHMETIC:
        new = ARITHMETIC[type(node.op)]
        out.append((f"{type(node.op).__name__} -> {new.__name__}", ("op", new)))
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in COMPARISON:
                out.append((f"{type(op).__name__} -> {COMPARISON[type(op)].__name__}", ("cmp", i)))
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        out.append((f"{node.value!r} -> {node.value + 1!r}", ("const", node.value + 1)))
        zero = -1 if node.value == 0 else type(node.value)(0)
        out.append((f"{node.value!r} -> {zero!r}", ("const", zero)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        out.append((f"{type(node.op).__name__} removed", ("unary", None)))
    args = node.args if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args) else []
    if len(args) >= 2 and ast.unparse(args[0]) != ast.unparse(args[1]):
        out.append(("arguments 1 and 2 swapped", ("swap", None)))
    return out


def mutants(source: str) -> list[dict]:
    """Every mutant of `source`: {"index", "line", "what", "before"}, in a stable order."""
    tree = ast.parse(source)
    skipped, found = _untouched(tree), []
    for position, node in enumerate(ast.walk(tree)):
        if id(node) in skipped:
            continue
        for what, _ in _sites(node):
            found.append({"index": len(found), "line": node.lineno, "what": what, "before": ast.unparse(node)[:80],
                          "node": position, "site": len([f for f in found if f["node"] == position])})  # fmt: skip
    return found


def mutated_source(source: str, mutant: dict) -> str:
    tree = ast.parse(source)
    node = list(ast.walk(tree))[mutant["node"]]
    _, (kind, value) = _sites(node)[mutant["site"]]
    if kind == "op":
        node.op = value()
    elif kind == "cmp":
        node.ops[value] = COMPARISON[type(node.ops[value])]()
    elif kind == "const":
        node.value = value
    elif kind == "swap":
        node.args[0], node.args[1] = node.args[1], node.args[0]
    elif kind == "unary":
        _replace(tree, node, node.operand)
    return ast.unparse(ast.fix_missing_locations(tree))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return
    raise AssertionError("node not found")


def run_forked(dest: Path, tests: tuple[str, ...], timeout: float) -> tuple[str, float, str]:
    """mutation_check.run_tests in a forked child of this process, which has torch imported but not ganforge: the
    child imports the copy's ganforge (and so the mutant) afresh. -> (outcome, seconds, output tail)."""
    output = dest / "pytest-output.txt"
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: its own process group, so that a timeout ends whatever its tests started
        os.setpgid(0, 0)
        with output.open("w") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
        os.chdir(dest)
        sys.path.insert(0, str(dest / "src"))
        os.environ["PYTHONPATH"] = str(dest / "src")
        sys.dont_write_bytecode = True  # a mutant's bytecode must never be cached for the next one to find
        code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests])
        os._exit(int(code))
    while time.monotonic() - start < timeout:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            outcome = {0: "passed", 1: "failed"}.get(code, f"error (pytest exit {code})")
            return outcome, time.monotonic() - start, output.read_text()[-2000:]
        time.sleep(0.2)
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "timeout", time.monotonic() - start, ""


def run_module(module: str, log: Path, only: set[int] | None, tests: tuple[str, ...]) -> None:
    path_in_src = Path("src") / "ganforge" / module
    source = (ROOT / path_in_src).read_text()
    found = mutants(source)
    done = {r["index"] for r in _records(log) if r.get("module") == module and "verdict" in r}
    todo = [m for m in found if m["index"] not in done and (only is None or m["index"] in only)]
    with tempfile.TemporaryDirectory(prefix="ganforge-pass-") as tmp:
        dest = copy_tree(Path(tmp))
        check_imports_copy(dest)
        target = dest / path_in_src
        target.write_text(ast.unparse(ast.parse(source)))
        outcome, base_seconds, tail = run_forked(dest, tests, 900)
        print(f"{module}: {len(found)} mutants, {len(todo)} to run; baseline {outcome} in {base_seconds:.0f} s",
              flush=True)  # fmt: skip
        if outcome != "passed":
            raise SystemExit(f"the unmutated {module} does not pass its tests:\n{tail}")
        timeout = max(120.0, 4 * base_seconds)  # a loaded machine slows a survivor's run several times
        for mutant in todo:
            target.write_text(mutated_source(source, mutant))
            outcome, seconds, tail = run_forked(dest, tests, timeout)
            verdict = {"failed": "killed", "timeout": "timeout", "passed": "survived"}.get(outcome, "error")
            record = {"module": module, "verdict": verdict, "seconds": round(seconds, 1)} | {
                k: mutant[k] for k in ("index", "line", "what", "before")
            }
            if verdict == "error":
                record["tail"] = tail[-600:]
            with log.open("a") as out:
                out.write(json.dumps(record) + "\n")
            print(f"{module}:{mutant['line']} #{mutant['index']} {mutant['what']:24} {verdict:8} {seconds:6.1f} s"
                  f"  {mutant['before']}", flush=True)  # fmt: skip


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def summary(log: Path, rerun: Path | None) -> None:
    """Counts per module of the pass in `log`; with `rerun`, a later log of its survivors and timeouts run again
    (against new tests), whose verdicts replace theirs."""
    records = _records(log)
    later = {(r["module"], r["index"]): r for r in _records(rerun)} if rerun else {}
    records = [later.get((r["module"], r["index"]), r) | {"first": r["verdict"]} for r in records]
    for module in dict.fromkeys(r["module"] for r in records):
        mine = [r for r in records if r["module"] == module]
        first = {v: sum(r["first"] == v for r in mine) for v in ("killed", "timeout", "survived", "error")}
        total = len(mutants((ROOT / "src" / "ganforge" / module).read_text()))
        seconds = sum(r["seconds"] for r in mine)
        print(f"{module}: {total} generated, {len(mine)} run in {seconds / 60:.0f} min of tests: "
              + ", ".join(f"{n} {v}" for v, n in first.items()))  # fmt: skip
        again = [r for r in mine if r["first"] != "killed" and (r["module"], r["index"]) in later]
        print(f"    of its {sum(r['first'] != 'killed' for r in mine)} survivors and timeouts, {len(again)} run again: "
              f"{sum(r['verdict'] == 'killed' for r in again)} killed")  # fmt: skip
        for r in mine:
            if r["verdict"] != "killed":
                print(f"    {r['verdict']} #{r['index']} line {r['line']}: {r['what']}  in  {r['before']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(OWNERS), help="mutate this module (repeatable)")
    parser.add_argument("--index", type=int, action="append", help="only this mutant of the module (repeatable)")
    parser.add_argument("--tests", action="append", help="run these test files instead of the module's owners")
    parser.add_argument("--log", type=Path, default=Path("/tmp/ganforge-mutation-pass.jsonl"))
    parser.add_argument("--count", action="store_true", help="print how many mutants each module makes, then exit")
    parser.add_argument("--summary", type=Path, metavar="LOG", help="summarise a log, then exit")
    parser.add_argument("--rerun", type=Path, metavar="LOG", help="with --summary: a log of survivors run again")
    args = parser.parse_args()
    if args.count:
        for module in OWNERS:
            print(f"{module:28} {len(mutants((ROOT / 'src' / 'ganforge' / module).read_text())):5}")
        return 0
    if args.summary:
        summary(args.summary, args.rerun)
        return 0
    start = time.monotonic()
    for module in args.module or OWNERS:
        tests = tuple(args.tests) if args.tests else OWNERS[module]
        run_module(module, args.log, set(args.index) if args.index else None, tests)
    print(f"wall time {time.monotonic() - start:.0f} s", flush=True)
    summary(args.log, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
