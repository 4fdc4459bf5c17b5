"""DIR/study.json: the study as this machine last saw it (every trial's settings, state, measurements and note,
the parameters' importances and the best trial as a `ganforge train` command), written after every trial, so that
`ganforge report DIR` draws the sweep report without the storage's password."""

import json
import math
import shlex
import time
from pathlib import Path

from ganforge.durable import replace_file
from ganforge.sweep.options import shared_words
from ganforge.sweep.space import train_words
from ganforge.urls import public_text

SNAPSHOT = "study.json"
RECORD = "sweep.json"  # the study's name, storage (public URL), metric and space
TRIALS = "trials"  # DIR/trials/<folder>/: each trial's run folder


def _number(value):
    """A JSON-safe number: NaN and infinities as null (JSON has none)."""
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def trial_record(trial) -> dict:
    return {
        "number": trial.number,
        "state": trial.state.name.lower(),
        "params": trial.params,
        "value": _number(trial.value) if trial.value is not None else None,
        "curve": [[step, _number(value)] for step, value in sorted(trial.intermediate_values.items())],
        "attrs": {key: value for key, value in trial.user_attrs.items() if key != "owner"},
    }


def importances(study) -> dict | str:
    """Each swept parameter's share of the metric's variance over the finished trials (Optuna's fANOVA), or why
    there is none yet."""
    import optuna
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < 2:
        return "needs at least two finished trials"
    try:
        return {name: float(share) for name, share in optuna.importance.get_param_importances(study).items()}
    except (RuntimeError, ValueError) as error:  # e.g. every finished trial had the same settings
        return f"not computed: {error}"


def best_command(options, space, params: dict) -> str:
    """The best trial's settings as a ready `ganforge train` command (a fresh run in runs/)."""
    words = ["ganforge", "train", *shared_words(options), "--outdir", "runs", *train_words(space, params)]
    return public_text(shlex.join(words))


def write_snapshot(outdir: Path, study, options, space) -> dict:
    """Write DIR/study.json from the storage and return it."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None and math.isfinite(t.value)]
    best = None
    if done:
        pick = max if study.direction.name == "MAXIMIZE" else min
        top = pick(done, key=lambda t: t.value)
        fixed = {dim.name: dim.values[0] for dim in space if dim.how == "fixed"}
        best = {"number": top.number, "value": top.value, "command": best_command(options, space, fixed | top.params)}
    snapshot = {
        "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "trials": [trial_record(t) for t in trials],
        "importances": importances(study),
        "best": best,
    }
    replace_file(outdir / SNAPSHOT, (json.dumps(snapshot, indent=1) + "\n").encode())
    return snapshot


def read_snapshot(outdir: Path) -> dict:
    return json.loads((outdir / SNAPSHOT).read_text(encoding="utf-8"))
