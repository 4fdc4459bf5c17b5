"""Do `ganforge checkpoint verify` and a real resume agree on mutated checkpoints?

Each mutant of the `checkpoint` fuzz target (a tiny run's checkpoint, mutated, its manifest signed again) is read by
`checkpoint verify` and by `train --resume MUTANT` one step further, both in the fuzzer's workers (3 GB address
space, 10 s per case). They agree when both accept it (the resume trains its step) or both refuse it (exit 2, one
line); any traceback, hang or memory blow-up is counted too. Prints the table and the disagreements; exits 1 on any.

    .venv/bin/python benchmarks/fuzz_checkpoint_agreement.py --runs 300
"""

import argparse
import collections
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import fuzz_readers as fuzz


def agreement(runs: int, seed: int, batch: int = 50) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-agreement-") as tmp:
        root = Path(tmp)
        valid = fuzz.make_checkpoint(root / "valid")
        for first in range(0, runs, batch):
            batch_dir = root / "batch"
            shutil.rmtree(batch_dir, ignore_errors=True)
            cases = []
            for i in range(first, min(first + batch, runs)):
                mutant = shutil.copytree(valid, batch_dir / f"case{i}" / valid.name)
                fuzz.mutate_input(mutant, random.Random(f"{seed}-agreement-{i}"))
                fuzz.resign_checkpoint(mutant)
                scratch = batch_dir / f"case{i}" / "scratch"
                cases.append(dict(id=2 * i, args=["checkpoint", "verify", str(mutant)]))
                cases.append(dict(id=2 * i + 1, args=fuzz.resume_args(mutant, scratch)))
            outcomes = fuzz.run_batch(cases, root, {})  # local files: no server to name
            for i in range(first, min(first + batch, runs)):
                counts.update(_judge(i, outcomes[2 * i], outcomes[2 * i + 1]))
    return counts


def _judge(i: int, verify: dict, resume: dict) -> list[str]:
    kinds = [f"verify {verify['kind']}", f"resume {resume['kind']}"]
    if verify["kind"] == resume["kind"] and verify["kind"] in ("accepted", "refused"):
        return [*kinds, "agree", f"both {verify['kind']}"]
    print(f"  #{i}: verify {verify['kind']} ({verify['detail'][:200]}) / resume {resume['kind']} "
          f"({resume['detail'][:200]})", flush=True)  # fmt: skip
    return [*kinds, "disagree"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="mutants")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.monotonic()
    c = agreement(args.runs, args.seed)
    print("\n| mutants | agree | both accepted | both refused | disagree | verify failures | resume failures "
          "| seconds |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    bad = ("traceback", "hang", "memory")
    failures = {who: sum(c[f"{who} {kind}"] for kind in bad) for who in ("verify", "resume")}
    print(f"| {args.runs} | {c['agree']} | {c['both accepted']} | {c['both refused']} | {c['disagree']} "
          f"| {failures['verify']} | {failures['resume']} | {time.monotonic() - start:.0f} |")  # fmt: skip
    return int(bool(c["disagree"] or failures["verify"] or failures["resume"]))


if __name__ == "__main__":
    sys.exit(main())
