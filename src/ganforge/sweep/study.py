"""`ganforge sweep`: an Optuna study whose trials are `ganforge train` runs.

    from ganforge.sweep import SweepOptions, sweep
    sweep(SweepOptions(data="digits.zip", outdir="sweeps/digits", preset="tiny", kimg=200, trials=20))

Rerunning continues the study: finished trials stay; a trial whose sweep stopped (Ctrl-C, SIGTERM, a killed
process, a machine that died) is marked failed and asked again with the same settings in the same folder, where its
run resumes from its checkpoint. Several machines share a study through one database (--storage).
"""

import dataclasses
import json
import os
import threading
import time
import warnings
from pathlib import Path

from ganforge.durable import replace_file
from ganforge.errors import UserError
from ganforge.families import family_of_preset
from ganforge.outputs import check_writable_folder
from ganforge.presets import DEFAULT_PRESET, PRESETS
from ganforge.sweep import storage as stores
from ganforge.sweep.measure import direction
from ganforge.sweep.options import SWEEP_OPTIONS, SweepOptions, shared_words
from ganforge.sweep.record import RECORD, TRIALS, write_snapshot
from ganforge.sweep.space import Dimension, parse_space, suggest, train_words
from ganforge.sweep.trial import Outcome, Plan, run_trial
from ganforge.urls import public_url

FOLDER, OWNER, RESUMES, NOTE, COMMAND = "folder", "owner", "resumes", "note", "command"


@dataclasses.dataclass
class Sweep:
    """What every worker thread of one sweep process shares."""

    options: SweepOptions
    space: tuple[Dimension, ...]
    study: object
    outdir: Path
    stopping: threading.Event
    asking: threading.Lock


def sweep(options: SweepOptions) -> int:
    """Run the study to `options.trials` trials (all machines together); returns 0, or 130/143 when stopped."""
    try:
        import optuna
    except ImportError:
        raise UserError("ganforge sweep needs Optuna: pip install 'ganforge[sweep]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        # The heartbeat is marked experimental, and meant for Study.optimize; the trials here are asked and told
        # by the sweep's own threads, which record the heartbeat themselves.
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
        return _sweep(options)


def _sweep(options: SweepOptions) -> int:
    outdir = Path(options.outdir)
    space = parse_space(options.space, family_of_preset(PRESETS[options.preset or DEFAULT_PRESET]).sweep_space)
    devices = trial_devices(options)
    outdir.mkdir(parents=True, exist_ok=True)
    check_writable_folder(outdir, "--outdir")
    url = options.storage or stores.default_storage(outdir)
    study = open_study(options, url)
    record_study(outdir, options, url, space)
    state = Sweep(options, space, study, outdir, threading.Event(), threading.Lock())
    continue_abandoned(study)
    status = run_workers(state, devices)
    from ganforge.sweep.page import write_sweep_report

    print(f"report {write_sweep_report(outdir, study, options, space)}", flush=True)
    return status


def open_study(options: SweepOptions, url: str):
    import optuna

    store = stores.open_storage(url, stale_trial_callback=retry_trial)
    try:
        return optuna.create_study(
            storage=store,
            study_name=options.study,
            direction=direction(options.metric),
            sampler=optuna.samplers.TPESampler(seed=options.sampler_seed),
            pruner=make_pruner(options.pruner),
            load_if_exists=True,
        )
    except ValueError as error:  # a study of that name that minimises where this one maximises, or the reverse
        raise UserError(f"--study {options.study}: {error}; choose another --study name") from None


def make_pruner(name: str):
    """Optuna's median pruner (a trial whose best value so far is worse than the median of the trials before it at
    the same point stops; not while fewer than two trials have finished), successive halving, or none."""
    import optuna

    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()


def trial_devices(options: SweepOptions) -> list[str | None]:
    """The device of each of the --parallel trials: a GPU each where there are GPUs, else the CPU."""
    wanted = options.device or "auto"
    if wanted == "cpu":
        return [options.device] * options.parallel
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        return [options.device] * options.parallel
    if options.parallel > count:
        raise UserError(f"--parallel {options.parallel}: this machine has {count} GPUs, one per trial; give <= {count}")
    return [f"cuda:{index}" for index in range(options.parallel)]


def record_study(outdir: Path, options: SweepOptions, url: str, space) -> None:
    """DIR/sweep.json: the study's name, its storage (public URL), the metric and the space, for the report and for
    the user who wonders where the study lives."""
    record = {
        "study": options.study,
        "storage": public_url(url),
        "metric": options.metric,
        "direction": direction(options.metric),
        "trials": options.trials,
        "space": [dim.text() for dim in space],
        "train": {d.flag: getattr(options, d.name) for d in SWEEP_OPTIONS if d.name in ("data", "preset", "kimg")},
    }
    replace_file(outdir / RECORD, (json.dumps(record, indent=2) + "\n").encode())


def retry_trial(study, trial) -> None:
    """Ask again, with the same settings and in the same folder, a trial that stopped before its end."""
    folder = trial.user_attrs.get(FOLDER, f"{trial.number:05d}")
    study.enqueue_trial(trial.params, user_attrs={FOLDER: folder, RESUMES: trial.number}, skip_if_exists=False)


def continue_abandoned(study) -> None:
    """Fail and retry the running trials that nobody runs any more: those of a sweep process of this machine that is
    gone (at once), and through the heartbeat those of any machine silent for longer than its grace period."""
    import optuna
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    optuna.storages.fail_stale_trials(study)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if stores.owner_gone(trial.user_attrs.get(OWNER)):
            try:
                study.tell(trial.number, state=TrialState.FAIL)
            except (RuntimeError, UpdateFinishedTrialError):  # another process of this machine took it first
                continue
            retry_trial(study, trial)


def run_workers(state: Sweep, devices: list[str | None]) -> int:
    """One thread per parallel trial; on Ctrl-C or SIGTERM the trials checkpoint and stop, and are retried by the
    next sweep. An error in one thread (the storage gone mid-sweep) stops the others and is raised here.

    The main thread waits on each worker's Event, never in Thread.join: a signal handler that raises inside join
    (Ctrl-C, SIGTERM) leaves the thread marked as ended while it still runs (Python 3.11), and the sweep would leave
    before its trials have checkpointed and been told."""
    errors: list[BaseException] = []
    done = [threading.Event() for _ in devices]
    for device, ended in zip(devices, done, strict=True):
        threading.Thread(target=worker, args=(state, device, errors, ended), daemon=True).start()
    try:
        _wait_all(done)
    except BaseException:
        state.stopping.set()
        _wait_all(done)
        raise
    if errors:
        raise errors[0]
    return 0


def _wait_all(events: list[threading.Event]) -> None:
    for event in events:
        while not event.wait(0.2):
            pass


def worker(state: Sweep, device: str | None, errors: list, ended: threading.Event) -> None:
    try:
        while not state.stopping.is_set():
            with state.asking:
                if not more_trials(state.study, state.options.trials):
                    return
                trial = state.study.ask()
            outcome = start_trial(state, trial, device)
            tell(state.study, trial, outcome)
            print(f"trial {trial.number}: {outcome.note}", flush=True)
            with state.asking:  # the study as it stands, for `ganforge report DIR`
                write_snapshot(state.outdir, state.study, state.options, state.space)
    except BaseException as error:  # handed to the main thread, which raises it
        errors.append(error)
        state.stopping.set()
    finally:
        ended.set()


def more_trials(study, wanted: int) -> bool:
    """Whether to start another trial: a stopped trial waits to be continued, or fewer than `wanted` trials are done,
    running or waiting to be continued (failed ones do not count: their retries do; settings queued by hand with
    `enqueue_trial` are asked in turn, and count once asked)."""
    from optuna.trial import TrialState

    alive = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
    trials = study.get_trials(deepcopy=False, states=alive)
    retries = [t for t in trials if t.state == TrialState.WAITING and RESUMES in t.user_attrs]
    counted = [t for t in trials if t.state != TrialState.WAITING or RESUMES in t.user_attrs]
    return bool(retries) or len(counted) < wanted


def start_trial(state: Sweep, trial, device: str | None) -> Outcome:
    options = state.options
    params = suggest(trial, state.space)
    folder = trial_folder(trial)
    trial.set_user_attr(FOLDER, folder)
    trial.set_user_attr(OWNER, stores.owner())
    words = train_command(options, state.space, params, state.outdir, folder, device)
    plan = Plan(state.outdir / TRIALS / folder, words, trial_environment(options, device))
    trial.set_user_attr(COMMAND, plan.command())
    heartbeat = Heartbeat(state.study, trial)
    return run_trial(trial, plan, options.metric, state.stopping, heartbeat)


def trial_folder(trial) -> str:
    """The trial's folder under DIR/trials/: its own number, or the folder of the trial it continues. What a shared
    database says is only ever taken as a number, never as a path."""
    folder = trial.user_attrs.get(FOLDER)
    return folder if isinstance(folder, str) and folder.isdigit() else f"{trial.number:05d}"


def train_command(options: SweepOptions, space, params: dict, outdir: Path, folder: str, device) -> list[str]:
    """The `ganforge train` words of one trial."""
    words = ["train", *shared_words(options), "--outdir", str(outdir / TRIALS / folder), "--metrics", options.metric]
    words += ["--metrics-gen", str(options.metrics_gen)] if options.metrics_gen else []
    words += ["--device", device] if device else []
    return words + train_words(space, params)


def trial_environment(options: SweepOptions, device: str | None) -> dict:
    """The trial's environment: on a CPU, the --parallel trials split its threads between them (the cores, or the
    OMP_NUM_THREADS the sweep was given)."""
    env = dict(os.environ)
    if device is None or device == "cpu":
        given = env.get("OMP_NUM_THREADS", "")
        threads = int(given) if given.isdigit() and int(given) > 0 else os.cpu_count() or 1
        env["OMP_NUM_THREADS"] = str(max(1, threads // options.parallel))
    return env


class Heartbeat:
    """Records the trial's heartbeat at most every HEARTBEAT_S / 2 seconds, so that a machine that dies leaves a
    trial that the others notice as stale."""

    def __init__(self, study, trial):
        self.study, self.trial, self.last = study, trial, 0.0

    def __call__(self) -> None:
        if time.monotonic() - self.last >= stores.HEARTBEAT_S / 2:
            self.last = time.monotonic()
            # Optuna's heartbeat API takes the storage's id of the trial, which only the trial object holds
            self.study._storage.record_heartbeat(self.trial._trial_id)


def tell(study, trial, outcome: Outcome) -> None:
    """The outcome to the study; a trial stopped with the sweep is failed and asked again (in the same folder)."""
    from optuna.trial import TrialState

    trial.set_user_attr(NOTE, outcome.note)
    if outcome.state == "complete":
        study.tell(trial, outcome.value)
    elif outcome.state == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, state=TrialState.FAIL)
        if outcome.state == "stopped":
            retry_trial(study, study.trials[trial.number])
