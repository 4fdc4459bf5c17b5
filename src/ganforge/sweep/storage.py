"""Where a sweep's study lives: an Optuna RDB storage (an SQLite file in the sweep's folder by default, or any
database URL Optuna takes, such as postgresql://, shared by several machines), opened with bounded waits and a
heartbeat, so that a trial whose machine died is noticed by the others and continued.

A URL is shown and recorded only as `urls.public_url` gives it: its password never leaves memory.
"""

import os
import socket
import time
from pathlib import Path

from ganforge.errors import UserError
from ganforge.urls import public_text, public_url

DEFAULT_FILE = "study.db"
HEARTBEAT_S = 20  # a running trial's heartbeat; one silent for GRACE_S counts as dead (its machine stopped)
GRACE_S = 120
CONNECT_TIMEOUT_S = 10
SCHEMA_RACE_TRIES = 5  # opens of an empty database that another machine is creating the tables of


def default_storage(outdir: Path) -> str:
    return f"sqlite:///{Path(outdir).resolve() / DEFAULT_FILE}"


def _engine_arguments(url: str) -> dict:
    """A connection attempt that gives up after CONNECT_TIMEOUT_S (a server that does not answer is one line, not a
    hang), for the drivers that take a timeout."""
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme in ("postgresql", "postgres", "mysql"):
        return {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}, "pool_pre_ping": True}
    if scheme == "sqlite":
        return {"connect_args": {"timeout": 60}}  # trials of parallel threads write the same file
    return {}


def open_storage(url: str, stale_trial_callback=None):
    """The RDB storage at `url`; one UserError naming its public URL when it cannot be reached or used."""
    import optuna
    import sqlalchemy.exc

    for attempt in range(SCHEMA_RACE_TRIES):
        try:
            return optuna.storages.RDBStorage(
                url,
                engine_kwargs=_engine_arguments(url),
                heartbeat_interval=HEARTBEAT_S,
                grace_period=GRACE_S,
                heartbeat_stale_trial_callback=stale_trial_callback,
            )
        except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError, OSError) as error:
            failure = error
            if not _lost_schema_race(error):
                break
            time.sleep(0.5 * (attempt + 1))
    raise _unusable(url, failure)


def _lost_schema_race(error: BaseException) -> bool:
    """Whether opening an empty database failed because another sweep created its tables at the same moment:
    PostgreSQL refuses the second CREATE with a unique violation of its catalogue or "already exists". The tables
    are there once the other commits, so the open is tried again."""
    import sqlalchemy.exc

    if isinstance(error, sqlalchemy.exc.IntegrityError):
        return True
    return isinstance(error, sqlalchemy.exc.ProgrammingError) and "already exists" in str(error)


def _unusable(url: str, error: BaseException) -> UserError:
    """The one line for a storage that cannot be opened, naming its public URL."""
    why = " ".join(str(error).split())[:300]
    return UserError(
        f"--storage {public_url(url)}: cannot open the study's database: {public_text(why)}; check the URL, "
        "that the server runs and lets this machine in, and that its driver is installed (PostgreSQL's, "
        "psycopg, comes with ganforge[sweep])"
    )


def owner() -> dict:
    """Who runs a trial: the machine and the sweep's process (a rerun on the same machine continues at once the
    trials of a sweep process that is gone, without waiting for the heartbeat's grace)."""
    return {"host": socket.gethostname(), "pid": os.getpid()}


def owner_gone(record) -> bool:
    """True for a trial of a sweep process of this machine that no longer runs."""
    if not isinstance(record, dict) or record.get("host") != socket.gethostname():
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process of that number: alive
        return False
    return False
