"""Hostile inputs against the command line, table-driven.

A test builds its hostile files (small generators in the test modules, no binary blobs), describes each case as the
`ganforge` arguments that read it, and hands the table to `run_cases`. The cases run one after another in ONE worker
process (hostile_worker.py), through click's runner, so that the command-line boundary is what is tested without
paying an interpreter and torch per case; the worker holds an address-space limit of 3 GB (the interpreter with
torch loaded takes well under 1 GB of it), a per-case alarm, and records for each case its exit code, output, the
seconds it took and its peak resident memory. `rejection_problems` says what is wrong with an outcome: a traceback,
another exit code than 2, not exactly one `error:` line, an unbounded message, too slow, or a path that should not
exist (an output, a partial file, the marker of an executed payload).
"""

import dataclasses
import json
import resource
import subprocess
import sys
from pathlib import Path

ADDRESS_SPACE_BYTES = 3 * 2**30
CASE_SECONDS = 10.0
MAX_MESSAGE_CHARS = 600  # a message names the file and the problem; it never echoes the file's content
WORKER = Path(__file__).with_name("hostile_worker.py")


@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile input: `ganforge ARGS` must fail with one clear line and exit 2, leaving `absent` paths absent."""

    name: str
    args: tuple[str, ...]
    absent: tuple[str, ...] = ()  # outputs, partial files, payload markers: none may exist afterwards
    exit_code: int = 2
    lines: int = 1  # `error:` lines expected (a config with several problems lists each)
    seconds: float = CASE_SECONDS


@dataclasses.dataclass(frozen=True)
class Outcome:
    name: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    exception: str | None  # the traceback of an exception that escaped the command (None: it exited by itself)


def run_cases(cases: list[Case], cwd: Path, address_space: int = ADDRESS_SPACE_BYTES) -> list[Outcome]:
    """Run every case in one worker process limited to `address_space` bytes; a case the worker did not finish (it
    died, or the whole table timed out) comes back with exit code None and what is known."""
    table = cwd / "hostile-cases.json"
    results = cwd / "hostile-outcomes.jsonl"
    table.write_text(json.dumps([dataclasses.asdict(c) for c in cases]))
    results.unlink(missing_ok=True)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    budget = sum(c.seconds for c in cases) + 60
    try:
        command = [sys.executable, str(WORKER), str(table), str(results)]
        proc = subprocess.run(command, cwd=cwd, preexec_fn=limit, capture_output=True, text=True, timeout=budget)
        tail = proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        tail = f"the worker ran past {budget:.0f} s"
    done = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    outcomes = [Outcome(**record) for record in done]
    for case in cases[len(outcomes) :]:
        outcomes.append(Outcome(case.name, None, "", "", 0.0, 0.0, f"the worker did not finish this case: {tail}"))
    return outcomes


def rejection_problems(case: Case, outcome: Outcome, cwd: Path) -> list[str]:
    """What is wrong with `outcome` for a hostile input (empty: rejected as promised)."""
    problems = []
    if outcome.exception is not None:
        problems.append(f"escaped: {outcome.exception[-1500:]}")
    if "Traceback" in outcome.stderr + outcome.stdout:
        problems.append("printed a traceback")
    if outcome.exit_code != case.exit_code:
        problems.append(f"exit {outcome.exit_code}, not {case.exit_code}")
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    others = [line for line in lines if not line.startswith(("error: ", "warning: "))]
    if case.exit_code == 2 and len(errors) != case.lines:
        problems.append(f"{len(errors)} error lines, not {case.lines}")
    if others:
        problems.append(f"stderr lines that are neither error nor warning: {others[:3]}")
    if any(len(line) > MAX_MESSAGE_CHARS for line in errors):
        problems.append(f"a message of {max(map(len, errors))} characters (unbounded?)")
    if outcome.seconds > case.seconds:
        problems.append(f"took {outcome.seconds:.1f} s (> {case.seconds:g} s)")
    problems += [f"left {path}" for path in case.absent if (cwd / path).exists()]
    return problems


def assert_all_rejected(cases: list[Case], cwd: Path) -> list[Outcome]:
    """Run the table; fail listing every case that was not rejected cleanly (with its stderr)."""
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    outcomes = run_cases(cases, cwd)
    failures = []
    for case, outcome in zip(cases, outcomes, strict=True):
        problems = rejection_problems(case, outcome, cwd)
        if problems:
            failures.append(f"{case.name}: {'; '.join(problems)}\n    stderr: {outcome.stderr.strip()[:800]}")
    assert not failures, f"{len(failures)} of {len(cases)} hostile cases were not rejected cleanly:\n" + "\n".join(
        failures
    )
    return outcomes
