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

    device = dist.init(options.get("device") or "auto")
    options = {**options, "data": str(Path(options["data"]).resolve())}
    problems, dataset = [], None
    try:
        dataset = open_dataset(options["data"], mirror=bool(options.get("mirror")))
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
    """Train with a resolved Config; returns the process exit status (0 done, 143/130 stopped by a signal)."""
    from ganforge import dist
    from ganforge.train.loop import training_loop
    from ganforge.train.precision import deterministic_mode
    from ganforge.train.resume import select_run

    device = dist.init(config.precision.device)
    try:
        run_dir, state, weights = select_run(config, device)
        with deterministic_mode(config.precision.deterministic), _matmul_policy(config, device):
            status = training_loop(config, run_dir, device, state, weights)
        # Tearing the group down while a peer is still inside its last collective aborts that peer (gloo:
        # "terminate called without an active exception"); on success every rank first waits for all.
        dist.barrier()
        return status
    finally:
        dist.shutdown()  # torchrun workers leave the process group cleanly, also after an error


def _matmul_policy(config, device):
    from ganforge.train.precision import Precision

    return Precision(config.precision.precision, device).matmul_policy()
