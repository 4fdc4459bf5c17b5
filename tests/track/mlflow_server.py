"""A real MLflow tracking server on loopback, for the tracker tests and for end-to-end runs that kill it mid-training.
It needs only the `mlflow` command of this interpreter's environment; nothing here imports mlflow."""

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from launch_helpers import free_port

STARTUP_TIMEOUT = 60  # seconds; it takes about 11 on a 2-core machine


class MlflowServer:
    """`uri` (http://127.0.0.1:<port>), `root` (its database, artifacts and `server.log`), and `kill()`."""

    def __init__(self, root: Path) -> None:
        self.root, self.log = root, root / "server.log"
        self.uri = f"http://127.0.0.1:{free_port()}"
        command = [
            sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", self.uri.rsplit(":", 1)[1],
            "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'db.sqlite'}",
            # Artifacts go through the server, as with a remote one: a killed server fails uploads too.
            "--artifacts-destination", str(root / "artifacts"),
        ]  # fmt: skip
        with self.log.open("w") as log:  # the child keeps its own descriptor
            # A session of its own: the server runs its workers in child processes, and kill() ends them all.
            self.process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)  # fmt: skip

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):  # not listening yet
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"mlflow server at {self.uri} never answered /health:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL the server and its workers, as a crash or a lost machine would end them."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@contextlib.contextmanager
def mlflow_server(root: Path):
    """A started MLflow server keeping its state in `root`; yields the MlflowServer, killed on exit."""
    server = MlflowServer(root)
    try:
        server.wait_healthy()
        yield server
    finally:
        server.kill()
