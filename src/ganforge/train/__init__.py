"""`ganforge train` as importable functions: `configure(options) -> Config`, then `run(config) -> exit status`.

    from ganforge.train import configure, run
    cfg = configure({"data": "digits.zip", "outdir": "runs", "cfg": "tiny", "kimg": 50})
    status = run(cfg)

Heavy imports happen inside the functions, so importing this package is cheap.
"""

from pathlib import Path


def configure(options: dict):
    """CLI-style options (missing or None = preset default) -> validated Config; UserError lists every problem."""
    from ganforge import dist
    from ganforge.checkpoint import Retention
    from ganforge.config import resolve
    from ganforge.data import open_dataset
    from ganforge.errors import UserError
    from ganforge.outputs import check_writable_folder

    device = dist.init(options.get("device") or "auto")
    options = {**options, "data": str(Path(options["data"]).resolve())}
    problems, dataset = [], None
    try:
        dataset = open_dataset(options["data"], mirror=bool(options.get("mirror")))
    except UserError as error:
        problems += error.problems
    try:
        check_writable_folder(Path(options["outdir"]), "--outdir")
    except UserError as error:
        problems += error.problems
    if options.get("metrics"):
        from ganforge.metrics import check_names

        try:
            check_names([name for name in options["metrics"].split(",") if name])
        except UserError as error:
            problems += error.problems
    try:
        Retention(options.get("keep_last") or 3, options.get("keep_every"), options.get("keep_max_age"))
    except UserError as error:
        problems += error.problems
    return resolve(options, dataset, dist.world_size(), device.type, problems)


def run(config) -> int:
    """Train with a resolved Config; returns the process exit status (0 done, 143/130 stopped by a signal).

    The process group is left on return and on error; an error after the run folder exists is also written to its
    log.txt."""
    from ganforge import dist
    from ganforge.train.loop import training_loop
    from ganforge.train.precision import kernel_policy
    from ganforge.train.resume import select_run
    from ganforge.train.rundir import record_failure

    device = dist.init(config.precision.device)
    try:
        run_dir, state, weights = select_run(config, device)
        try:
            with kernel_policy(config.precision.deterministic), _matmul_policy(config, device):
                status = training_loop(config, run_dir, device, state, weights)
        except BaseException as error:
            if dist.is_main():
                record_failure(run_dir, error)
            raise
        dist.barrier()  # every rank has finished its last collective before any rank leaves the group
        return status
    finally:
        dist.shutdown()


def main(options: dict, dry_run: bool = False) -> int:
    """`ganforge train`: configure, then print the configuration (`dry_run`) or train; returns the exit status.

    Every way out, a user error included, leaves the process group that `configure` joined."""
    from ganforge import dist

    try:
        config = configure(options)
        if dry_run:
            dist.print0(config.to_json())
            return 0
        return run(config)
    finally:
        dist.shutdown()


def _matmul_policy(config, device):
    from ganforge.train.precision import Precision

    return Precision(config.precision.precision, device).matmul_policy()
