"""The MLflow tracker. It talks through its own `MlflowClient`, never through mlflow's module-level active run or
tracking URI, so that several trackers (and tests) in one process cannot write into each other's runs. mlflow is an
optional dependency: it is imported by `start`, so that importing this module needs nothing beyond ganforge."""

import importlib.util
import logging
import math
import os
import time
from pathlib import Path

import PIL.Image

from ganforge.urls import public_url

# MLflow's server refuses longer values and larger batches (mlflow.utils.validation); ganforge's full config is in
# the run folder anyway, so an over-long value is cut rather than failing the whole batch on every retry.
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
END_STATUS = {"finished": "FINISHED", "failed": "FAILED", "stopped": "KILLED"}
NO_LOCAL_STORE = (
    "neither --tracker-uri nor MLFLOW_TRACKING_URI is set, and MLflow's store in RUN/mlruns needs the full mlflow "
    "package (`pip install mlflow`; mlflow-skinny lacks SQLAlchemy): install it, or give a tracking server's URI"
)


class MlflowTracker:
    """`uri`: the tracking server or store; None leaves it to MLflow (MLFLOW_TRACKING_URI) except where that is unset
    too: then the run keeps its own SQLite store and artifacts in `<run folder>/mlruns`, rather than in MLflow's
    default `./mlflow.db` and `./mlruns` of whatever folder training was started from. `project`: the experiment
    (None: MLFLOW_EXPERIMENT_NAME, else "ganforge"). `run_name`: None names the run after its run folder."""

    name = "mlflow"

    def __init__(self, uri: str | None, project: str | None, run_name: str | None) -> None:
        self._uri, self._project, self._run_name = uri, project, run_name
        self._client = self._run_id = None
        self._alerts = 0  # how many alerts the run has recorded, continued on resume
        self.location = ""

    def start(self, run_dir: Path, resume_id: str | None) -> str:
        from mlflow.tracking import MlflowClient

        # MLflow retries a failed request 7 times over about 4 minutes by default; ganforge's background thread
        # retries on its own, so a down server is said (and the next event tried) within seconds. Set by the user,
        # the variables win.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        # At the end of a run MLflow prints links to it made from the tracking URI as given, credentials and all
        # (from --tracker-uri or MLFLOW_TRACKING_URI), into the middle of the run's own output: never.
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        # MLflow and the database migrations of its local store log INFO lines on stderr, which ganforge keeps for
        # errors and warnings.
        for logger in ("mlflow", "alembic"):
            logging.getLogger(logger).setLevel(logging.WARNING)
        uri, artifacts = self._uri, None
        self.location = public_url(uri or os.environ.get("MLFLOW_TRACKING_URI", ""))
        if uri is None and not os.environ.get("MLFLOW_TRACKING_URI"):
            if importlib.util.find_spec("sqlalchemy") is None:  # mlflow-skinny has no database store
                raise RuntimeError(NO_LOCAL_STORE)
            store = (run_dir / "mlruns").resolve()
            store.mkdir(parents=True, exist_ok=True)
            uri, artifacts = f"sqlite:///{store / 'mlflow.db'}", (store / "artifacts").as_uri()
            self.location = f"{store / 'mlflow.db'} (to browse it: mlflow ui --backend-store-uri {uri})"
        self._client = MlflowClient(tracking_uri=uri)
        run = self._existing_run(resume_id) if resume_id else None
        if run is None:
            name = self._project or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "ganforge"
            experiment = self._client.get_experiment_by_name(name)
            experiment_id = experiment.experiment_id if experiment else self._client.create_experiment(name, artifacts)
            run = self._client.create_run(experiment_id, run_name=self._run_name or run_dir.name)
        self._run_id = run.info.run_id
        self._alerts = int(run.data.metrics.get("Alerts/count", 0))
        return self._run_id

    def _existing_run(self, run_id: str):
        """The run `run_id`, set running again; None where this server does not have it (another server, or a run
        deleted since), so that the caller starts a new one. Any other failure (the server is down) propagates."""
        from mlflow.exceptions import MlflowException

        try:
            run = self._client.get_run(run_id)
        except MlflowException as error:
            if error.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        if run.info.lifecycle_stage == "deleted":  # MLflow refuses to log into a deleted run
            return None
        self._client.update_run(run_id, status="RUNNING")
        return run

    def params(self, params: dict, tags: dict[str, str]) -> None:
        """MLflow refuses to change a logged param. So only params not yet logged are sent (a retry, or a resumed
        run, sends the same ones again) and a value changed on resume (an option that is not training maths) becomes
        the tag `param_changed.<key>`; the param keeps the value the run started with."""
        from mlflow.entities import Param, RunTag

        logged = self._client.get_run(self._run_id).data.params
        new, tags = [], dict(tags)
        for key, value in params.items():
            value = str(value)[:MAX_PARAM_VALUE]
            if key not in logged:
                new.append(Param(key, value))
            elif logged[key] != value:
                tags[f"param_changed.{key}"] = value
        run_tags = [RunTag(key, str(value)[:MAX_TAG_VALUE]) for key, value in tags.items()]
        for i in range(0, max(len(new), len(run_tags)), MAX_PARAMS_TAGS_PER_BATCH):
            chunk = slice(i, i + MAX_PARAMS_TAGS_PER_BATCH)
            self._client.log_batch(self._run_id, params=new[chunk], tags=run_tags[chunk], synchronous=True)

    def scalars(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, float(value), now, step) for key, value in values.items() if math.isfinite(value)]
        for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            self._client.log_batch(self._run_id, metrics=metrics[i : i + MAX_METRICS_PER_BATCH], synchronous=True)

    def image(self, key: str, path: Path, step: int) -> None:
        """Twice: `log_image` with the step, which the MLflow UI shows on a step slider, and the file itself under
        `samples/`, where it keeps its name (log_image's copies are named by key, step, time and a random id)."""
        with PIL.Image.open(path) as image:  # no `synchronous=`: mlflow 2.12's log_image lacks it, and waits anyway
            self._client.log_image(self._run_id, image, key=key, step=step)
        self._client.log_artifact(self._run_id, str(path), artifact_path="samples")

    def alert(self, text: str, step: int) -> None:
        """The text as `alerts/<n>_step<step>.txt`, the tag `last_alert` (shown in the run list) and the metric
        `Alerts/count` at the step (a curve that marks when they happened). A retry rewrites the same file."""
        from mlflow.entities import Metric, RunTag

        count = self._alerts + 1
        self._client.log_text(self._run_id, f"step {step}: {text}\n", f"alerts/{count:03d}_step{step}.txt")
        metric = Metric("Alerts/count", count, int(time.time() * 1000), step)
        tag = RunTag("last_alert", text[:MAX_TAG_VALUE])
        self._client.log_batch(self._run_id, metrics=[metric], tags=[tag], synchronous=True)
        self._alerts = count

    def artifact(self, path: Path, folder: str) -> None:
        self._client.log_artifact(self._run_id, str(path), artifact_path=folder)

    def finish(self, status: str) -> None:
        """A stopped run is KILLED, MLflow's word for ended early; resuming sets it RUNNING again."""
        self._client.set_terminated(self._run_id, END_STATUS[status])
