"""`ganforge train` as importable functions: `run(config)` trains with a resolved Config, `main(options)` is the
whole command (resolve, then print the configuration or train)."""

import sys

import torch

from ganforge import dist
from ganforge.config import Config
from ganforge.config.describe import describe_derived, small_data_advice
from ganforge.devices import describe_kernels
from ganforge.errors import UserError
from ganforge.nets.configured import make_networks
from ganforge.train.build import build_runtime
from ganforge.train.loop import training_loop
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import observe, resolve_run
from ganforge.train.resume import (
    Source,
    allowed_changes,
    check_start,
    choose_source,
    describe_start,
    find_sources,
    select_run,
)
from ganforge.train.rundir import RunKey, record_failure, write_labels


def run(config: Config, source: Source | None = None) -> int:
    """Train with a resolved Config; returns the process exit status (0 done, 143/130 stopped by a signal).

    `source`: what the run starts from, as `resolve_run` chose it (None: chosen here). The runtime (precision policy,
    datasets) is built once here and handed to the loop. The process group is left on return and on error; an
    error after the run folder exists is also written to its log.txt."""
    device = dist.init(config.runtime.device)
    try:
        runtime = build_runtime(config, device)
        source = choose_source(config, find_sources(RunKey.of(config))) if source is None else source
        run_dir, state, weights = select_run(config, device, source)
        if dist.is_main():  # beside select_run's config.json and env.json; here, where the dataset is
            write_labels(run_dir, runtime.dataset)
        try:
            with runtime.precision.policy():
                status = training_loop(config, runtime, run_dir, state, weights)
        except BaseException as error:
            if dist.is_main():
                record_failure(run_dir, error)
            raise
        dist.barrier()  # every rank has finished its last collective before any rank leaves the group
        return status
    finally:
        dist.shutdown()


def parameter_counts(config: Config) -> str:
    """ "parameters: G <n>, D <n>": the networks' trainable parameter counts, built on the meta device (no memory)."""
    with torch.device("meta"):
        G, D = make_networks(config)
    return f"parameters: G {sum(p.numel() for p in G.parameters()):,}, D {sum(p.numel() for p in D.parameters()):,}"


def check_step_memory(config: Config, gpu_memory_gb: float | None, device_type: str) -> None:
    """UserError when one step of `config`, traced on fake tensors, does not fit the GPU it will run on (its free
    memory) or the one --gpu-memory names; nothing is traced on a CPU without --gpu-memory."""
    from ganforge.train import step_memory

    device = torch.device("cuda", torch.cuda.current_device()) if device_type == "cuda" else torch.device("cpu")
    available, where = step_memory.budget(gpu_memory_gb, device)
    if available is not None and (problem := step_memory.fit_problem(config, available, where)):
        raise UserError(problem)


def main(options: TrainOptions) -> int:
    """`ganforge train`: resolve, then print the configuration and what it implied (`--dry-run`) or train; returns
    the exit status.

    Every way out, a user error included, leaves the process group that `resolve` joined."""
    try:
        facts = observe(options)
        config, source = resolve_run(options, facts)
        check_step_memory(config, options.gpu_memory, facts.device_type)
        if options.dry_run:
            dist.print0(config.to_json())
            dist.print0(parameter_counts(config), file=sys.stderr)
            for line in describe_derived(config):  # on stderr, so that stdout stays one JSON document
                dist.print0(f"derived: {line}", file=sys.stderr)
            for line in small_data_advice(config):
                dist.print0(line, file=sys.stderr)
            kernels = describe_kernels(config.runtime.kernels, facts.device_type, config.runtime.compiling)
            dist.print0(kernels, file=sys.stderr)
            notes = check_start(config, source)[2]  # what the run would refuse is refused here too
            for line in [*allowed_changes(notes), *describe_start(config, source)]:  # last: which run, and why
                dist.print0(line, file=sys.stderr)
            return 0
        return run(config, source)
    finally:
        dist.shutdown()
