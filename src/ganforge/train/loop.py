"""The training loop: one function that reads top to bottom, in a fixed order of blocks (report, snapshot,
checkpoint, done?, fetch data, phases, EMA); the I/O lives in the helpers it calls.

Progress is counted in images (`cur_nimg`). Ticks, snapshots and checkpoints fall on multiples of the global batch,
and every random draw of a step is seeded from (seed, cur_nimg, phase, micro-batch), so a run resumed from any
checkpoint continues exactly as if it had never stopped.
"""

import contextlib
import signal
import time
from functools import partial
from pathlib import Path

import torch

from ganforge import checkpoint, dist
from ganforge.config import Config
from ganforge.config.describe import describe_derived, small_data_advice
from ganforge.data.remote import ServerError
from ganforge.data.source import DataSource
from ganforge.devices import describe_kernels
from ganforge.errors import UserError
from ganforge.metrics import append_result, compute_metrics
from ganforge.monitor.alerts import Alerts
from ganforge.monitor.telemetry import Monitor, step_probe
from ganforge.nets import summary
from ganforge.nets.growth import describe_stage, stage_of
from ganforge.preempt import PreemptionGuard
from ganforge.report import refresh_report
from ganforge.snapshot import save_snapshot
from ganforge.stat_names import AUG_P, AUG_RT
from ganforge.train import checkpointing, growing, logs
from ganforge.train.build import Runtime, build
from ganforge.train.phases import check_divergence, micro_batches, run_phase, tick_scalars
from ganforge.train.schedules import plan_step, update_ema
from ganforge.train.sinks import folder_sinks
from ganforge.urls import public_url


def training_loop(cfg: Config, runtime: Runtime, run_dir: Path, resume: dict | None, weights: list[Path]) -> int:
    """Train until `cfg.schedule.kimg` with the runtime `run` built; `resume` is the checkpoint state to continue
    from, `weights` the snapshot / discriminator files to start from. Returns the exit status (0, or 143/130 after a
    preemption checkpoint)."""
    s, device, dataset = cfg.schedule, runtime.device, runtime.dataset
    total_nimg, tick_nimg = round(s.kimg * 1000), round(s.tick_kimg * 1000)
    probe = step_probe(cfg, device)  # times the step's sections (the trainer's) for the monitor
    trainer, phases, G_ema = build(cfg, device, runtime.precision, probe=probe)
    data = DataSource(dataset, cfg.world_size)
    loop = checkpointing.restore(resume, trainer, G_ema, data) if resume else {"cur_nimg": 0}
    checkpointing.load_pretrained(weights, trainer, G_ema)
    if cfg.model.grow:  # the stage the run starts or resumes at, which the first report's summaries show
        growing.grow(trainer, G_ema, loop["cur_nimg"])
    cur_nimg = handled_nimg = saved_nimg = loop["cur_nimg"]
    if resume is None:
        handled_nimg = saved_nimg = -1  # a fresh run reports, samples and checkpoints its starting point
    main_dir = run_dir if dist.is_main() else None  # only rank 0 writes
    sinks = folder_sinks(run_dir, total_nimg, cur_nimg, partial(_trackers, cfg, run_dir)) if main_dir else ()
    log = logs.RunLog(main_dir, total_nimg, cur_nimg, sinks, watch=Alerts(cfg.world_size).check)
    retention = checkpoint.Retention(
        keep_last=cfg.run.keep_last, keep_every_kimg=cfg.run.keep_every, keep_max_age_days=cfg.run.keep_max_age
    )
    rank, world = dist.rank(), cfg.world_size
    monitor = Monitor(cfg, device, log.run_dir, cur_nimg, log.print, {_label(p): p.interval for p in phases}, probe)
    with contextlib.closing(log), PreemptionGuard() as guard, monitor:
        samples = logs.SampleGrid(cfg, dataset, device)
        _start_report(cfg, log, trainer, samples, run_dir, cur_nimg)
        data.open(s.batch // world, s.seed, rank, cfg.data.workers, device, log.print, cfg.data.shuffle_buffer)
        if (threads := checkpointing.thread_change(loop, device)) is not None:
            log.print(f"warning: {threads}")
        tick_stats = logs.TickStats()
        log.start_clock()
        while True:
            at_tick = (cur_nimg % tick_nimg == 0 or cur_nimg >= total_nimg) and cur_nimg != handled_nimg
            at_snap = at_tick and (cur_nimg // tick_nimg % s.snap == 0 or cur_nimg >= total_nimg)
            preempted = guard.any_rank_requested(device)
            handled_nimg = cur_nimg if at_tick else handled_nimg

            # Report: one status line and stats record per tick.
            if at_tick:  # the one read of device values in a tick (steps make none), then the divergence check
                values = tick_stats.reduce(device, tick_scalars(trainer) | _augment_stats(trainer))
                check_divergence(values)
                stats = monitor.tick(values)
                log.tick(cur_nimg, tick_of(cur_nimg, tick_nimg), stats, device)

            # Snapshot: replica check, sample grid, EMA generator for sharing.
            if at_snap:
                _snapshot(cfg, runtime, run_dir, log, trainer, G_ema, samples, cur_nimg)

            # Checkpoint: with every snapshot, and once when preempted.
            if (at_snap or preempted) and saved_nimg != cur_nimg:
                saved_nimg = _checkpoint(run_dir, log, trainer, G_ema, cur_nimg, tick_nimg, retention, data)

            # Done? Finished, or preempted (exit with the signal's conventional status).
            if preempted:
                log.print(stop_line(guard.signal_number, cur_nimg))
                log.outcome = "stopped"
                _closing_report(cfg, run_dir, log.print)
                return guard.exit_code
            if cur_nimg >= total_nimg:
                if cur_nimg == loop["cur_nimg"] and resume is not None:
                    log.print(f"already at {cur_nimg / 1000:g} kimg; nothing to do (raise --kimg to continue)")
                else:
                    log.print(f"done: {cur_nimg / 1000:g} kimg; results in {run_dir}")
                log.outcome = "finished"
                _closing_report(cfg, run_dir, log.record)  # the terminal's last line stays the result
                return 0

            with monitor.step(cur_nimg):  # timed for telemetry, and profiled when its turn comes
                # Fetch data: this rank's share of the global batch.
                wait_start = time.monotonic()
                try:
                    with probe.label("data"):
                        images, labels = next(data)
                except UserError as error:  # a bad sample or a failing server mid-run: keep the progress (one
                    if world == 1 and saved_nimg != cur_nimg:  # process: no peer waits)
                        saved_nimg = _checkpoint(run_dir, log, trainer, G_ema, cur_nimg, tick_nimg, retention, data)
                    if isinstance(error, ServerError):  # its line says what the server did; nothing to verify
                        raise
                    raise UserError(
                        *error.problems,
                        f"`ganforge dataset verify {public_url(cfg.data.path)}` lists every bad "
                        "file; rerun the same command after fixing them to resume",
                    ) from None
                log.data_wait(time.monotonic() - wait_start)

                # Grow (--grow): the networks' stage at this image count, and the reals at its resolution.
                if cfg.model.grow:
                    images = growing.reals_at(images, growing.grow(trainer, G_ema, cur_nimg))

                # Plan the step: every scheduled value it uses (learning rate, betas, gamma, blur, p, EMA decay) and
                # which phases run, from the images seen so far.
                plan = plan_step(cfg, cur_nimg, phases)

                # Run phases: G main, G path length, D main, D R1, each on its interval (and G after D's warm-up);
                # R3GAN: D main with R1 and R2, then G main, every step. An annealed --aug fixed p is set first.
                _set_augment_p(trainer, plan.augment_p)
                for index, (phase, due) in enumerate(zip(phases, plan.due, strict=True)):
                    if due:
                        with probe.label(_label(phase)):
                            mbs = micro_batches(cfg, plan, index, images, labels, trainer.G.num_ws)
                            tick_stats.add(run_phase(trainer, phase, index, plan, mbs))
                if trainer.ada is not None:
                    trainer.ada.update(trainer.augment, s.batch)

                # EMA: G_ema follows G with the configured half-life.
                with probe.label("EMA"):
                    update_ema(G_ema, trainer.G, plan.ema_beta)
            cur_nimg += s.batch
            log.step(cur_nimg)  # the run's own speed and time, said once before the first tick


def _label(phase) -> str:
    """The phase's name in profiles and their summaries: "G main", "D reg", ..."""
    return phase.name.replace("_", " ")


def _set_augment_p(trainer, p: float | None) -> None:
    if p is not None:
        trainer.augment.p.fill_(p)


def _augment_stats(trainer) -> dict:
    """The augmentation's p (and ADA's r_t) as device scalars, for the tick to read with its statistics."""
    if trainer.ada is None:
        annealed = trainer.cfg.schedule.anneal_kimg is not None and trainer.cfg.augment.mode == "fixed"
        return {AUG_P: trainer.augment.p} if annealed else {}
    scalars = trainer.ada.scalars(trainer.augment)
    return {AUG_P: scalars["p"], AUG_RT: scalars["rt"]}


def _trackers(cfg: Config, run_dir: Path, say):
    """The experiment trackers' sink (None when none is asked for), opened in the background; their failures are
    warnings in the log."""
    if not cfg.run.tracker:
        return None
    from ganforge.track.session import TrackedRun

    return TrackedRun(cfg, run_dir, say)


def stop_line(signal_number: int, cur_nimg: int) -> str:
    """Why the run stops: Ctrl-C (SIGINT) is the user's stop; SIGTERM is what schedulers send to preempt a job."""
    why = "stopped by the user (Ctrl-C)" if signal_number == signal.SIGINT else "stopping on signal"
    return f"{why} after {cur_nimg / 1000:g} kimg; rerun the same command to resume"


def _closing_report(cfg: Config, run_dir: Path, say) -> None:
    """The report rewritten once the log says how the run ended, so that the page does not say it is still running."""
    if dist.is_main() and cfg.run.report:
        say(refresh_report(run_dir))


def tick_of(cur_nimg: int, tick_nimg: int) -> int:
    """The tick a report at `cur_nimg` closes: tick k covers images ((k - 1) x tick, k x tick]. A run that ends off a
    tick boundary reports within the next tick (a shorter run resumed with a longer --kimg does not repeat the
    number of its last full tick), and reports the same tick again when resumed to its end. A function of the images
    alone, so that a resumed run writes what the run never stopped writes."""
    return -(-cur_nimg // tick_nimg)


def _checkpoint(
    run_dir: Path, log: logs.RunLog, trainer, G_ema, cur_nimg: int, tick_nimg: int, retention, data: DataSource
) -> int:
    """Save the training state at `cur_nimg` (collective); returns `cur_nimg`, the newest saved position."""
    loop_state = {"cur_nimg": cur_nimg, "cur_tick": tick_of(cur_nimg, tick_nimg)}
    state = checkpointing.capture(trainer, G_ema, loop_state, data)
    path = checkpoint.save(run_dir / "checkpoints", state, tag=str(cur_nimg), retention=retention)
    log.print(f"checkpoint {path}")
    log.saved("checkpoint", path)
    return cur_nimg


def _start_report(cfg: Config, log: logs.RunLog, trainer, samples, run_dir: Path, cur_nimg: int) -> None:
    """Per-layer network summaries, derived values, and the grid of training images."""
    z = torch.zeros([2, cfg.model.z_dim], device=trainer.pl_mean.device)
    c = torch.zeros([2, cfg.data.label_dim], device=trainer.pl_mean.device)
    if dist.is_main():
        img = trainer.G(z, c)
        img = growing.at_stage(img, trainer.D.stage[0]) if cfg.model.grow else img
        detail = log.print if cur_nimg == 0 else log.record  # a resumed run's terminal showed these when it started
        detail(summary(trainer.G, z, c))
        detail(summary(trainer.D, img, c))
        for line in describe_derived(cfg):
            detail(f"derived: {line}")
        for line in small_data_advice(cfg):
            detail(line)
        log.print(describe_kernels(cfg.runtime.kernels, z.device.type, cfg.runtime.compiling))
        log.print(f"{'resuming at' if cur_nimg else 'starting at'} {cur_nimg / 1000:g} kimg in {run_dir}")
        log.images("reals", samples.save_reals(run_dir / "reals.png"), run_dir / "reals.png", cur_nimg)


def _snapshot(
    cfg: Config, runtime: Runtime, run_dir: Path, log: logs.RunLog, trainer, G_ema, samples, cur_nimg: int
) -> None:
    """Check that every rank holds the same weights; rank 0 writes the fakes grid and the EMA snapshot; all ranks
    compute the --metrics of G_ema (collective) and rank 0 appends them to metric-<name>.jsonl."""
    modules = {"G": trainer.G, "D": trainer.D, "G_ema": G_ema}
    weights = {f"{name}.{key}": value for name, module in modules.items() for key, value in module.state_dict().items()}
    mismatched = dist.check_replicas(weights)
    assert not mismatched, f"replicas differ in {mismatched[:5]} (a bug or a faulty device)"
    kimg = logs.kimg_name(cur_nimg, cfg.schedule)
    path = run_dir / "snapshots" / f"network-snapshot-{kimg}.safetensors"
    if dist.is_main():
        fakes = run_dir / f"fakes{kimg}.png"
        log.images("fakes", samples.save_fakes(G_ema, fakes), fakes, cur_nimg)
        path.parent.mkdir(exist_ok=True)
        stage = stage_of(G_ema)  # taken while growing: the generator records its stage, and the log says it
        meta = {"kimg": cur_nimg / 1000, "dataset": cfg.data.name, "cfg": cfg.preset}
        save_snapshot(path, G_ema, meta | logs.label_meta(runtime.dataset))
        log.print(f"snapshot {path}" + (f" (grown to {describe_stage(stage)})" if stage else ""))
        log.saved("snapshot", path)
    if cfg.run.metrics:
        options = {"device": runtime.device, "batch_size": cfg.schedule.batch_gpu, "seed": cfg.schedule.seed}
        options |= {"vgg16": cfg.run.vgg16, "inception_classifier": cfg.run.inception_classifier}
        options |= {"num_gen": cfg.run.metrics_gen}
        records = compute_metrics(
            cfg.run.metrics, generator=G_ema, real=runtime.metric_reals, progress=False, **options
        )
        for record in records:
            append_result(run_dir / f"metric-{record['metric']}.jsonl", record, snapshot=path)
            log.metric(record, cur_nimg)
    if dist.is_main() and cfg.run.report:  # after the metrics, so that the page shows them
        log.print(refresh_report(run_dir))
