"""Running `ganforge train` in other processes, one or several under torchrun: start, wait, kill, compare."""

import contextlib
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.data.build import BuildOptions, build

COMPARED = ("G", "D", "G_ema", "opt_G", "opt_D", "scaler_G", "scaler_D", "augment", "loop", "sampler")
TIMEOUT = 120


def free_port() -> int:
    """A port free now, for a server that must bind it itself; another process may take it before then, so where the
    test can hold the port (a rendezvous store), `rendezvous_store` does."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def rendezvous_store():
    """A c10d rendezvous store hosted here, bound from the start -> its endpoint "127.0.0.1:PORT". torchrun launchers
    given it find its port taken and join it as clients, as they join a store another node hosts; a port only picked
    free here is bound seconds later by the first launcher, and another test's server or gloo connection could take
    it meanwhile (then that launcher fails and the other waits on the squatter)."""
    store = torch.distributed.TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, wait_for_workers=False)
    try:
        yield f"127.0.0.1:{store.port}"
    finally:
        del store


CHILD_THREADS = 1  # torch's intra-op threads in the processes these helpers start: the test's budget is one core


def env() -> dict:
    threads = str(CHILD_THREADS)
    return dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, PYTHONUNBUFFERED="1")


@contextlib.contextmanager
def intra_op_threads(count: int):
    """torch's intra-op thread count set to `count` meanwhile. CPU kernels split their sums over the threads, so a
    run compared bit for bit with one in another process must use as many threads as that process does (the
    caller's own count is whatever its environment says)."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def start(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc (torchrun starts each worker in a session of its own, so killing
    torchrun's process group would leave the workers training)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_all(proc: subprocess.Popen) -> None:
    """SIGKILL `proc` and all its descendants at once, as when the machine dies."""
    for pid in [proc.pid, *descendants(proc.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_command(command: list[str], expect: int = 0) -> str:
    proc = subprocess.run(command, env=env(), capture_output=True, text=True, timeout=TIMEOUT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == expect, f"exit {proc.returncode} != {expect}:\n{output[-4000:]}"
    return output


def checkpoints(outdir: Path) -> list[Path]:
    return sorted((p.parent for p in outdir.glob("*/checkpoints/ckpt-*/manifest.json")), key=lambda p: p.name)


def wait_for_checkpoint(proc: subprocess.Popen, outdir: Path) -> Path:
    """Wait for the first checkpoint with training progress in it (a fresh run also checkpoints its start)."""
    deadline = time.monotonic() + TIMEOUT
    while not [p for p in checkpoints(outdir) if p.name != "ckpt-000000000"]:
        assert proc.poll() is None, f"exited {proc.returncode} before its first checkpoint:\n{proc.stdout.read()}"
        assert time.monotonic() < deadline, "no checkpoint in time"
        time.sleep(0.02)
    return checkpoints(outdir)[-1]


def timed_run(command: list[str], outdir: Path) -> float:
    """Run to the end; return the seconds from its first checkpoint to its exit (the window a kill can hit)."""
    proc = start(command)
    try:
        wait_for_checkpoint(proc, outdir)
        first = time.monotonic()
        output = proc.communicate(timeout=TIMEOUT)[0]
    finally:
        kill_all(proc)
    assert proc.returncode == 0, output[-4000:]
    return time.monotonic() - first


def kill_at(command: list[str], outdir: Path, delay: float, final_nimg: int) -> bool:
    """Start `command`, SIGKILL it (workers included) `delay` seconds after its first checkpoint; False if it
    finished first, or wrote its final checkpoint, at `final_nimg` (a rerun would then have nothing left to do)."""
    proc = start(command)
    try:
        wait_for_checkpoint(proc, outdir)
        time.sleep(delay)
        finished = proc.poll() is not None or checkpoints(outdir)[-1].name == f"ckpt-{final_nimg:09d}"
    finally:
        workers = descendants(proc.pid)
        kill_all(proc)
        proc.wait(timeout=TIMEOUT)
    deadline = time.monotonic() + 10
    while [pid for pid in workers if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if alive(pid)], "workers outlived the kill"
    return not finished


def kill_then_rerun(command: list[str], outdir: Path, window: float, final_nimg: int) -> str:
    """Kill `command` at a random moment of its training `window` (`timed_run`'s; printed, to replay a failure), then
    run the same command to its end: that run's output."""
    delay = random.uniform(0.0, 0.8 * window)
    print(f"killing {delay:.3f} s after the first checkpoint (window {window:.3f} s)")
    if not kill_at(command, outdir, delay, final_nimg):  # a loaded machine ran faster than the reference: kill at once
        shutil.rmtree(outdir)
        assert kill_at(command, outdir, 0.0, final_nimg), "the run finished before it could be killed"
    return run_command(command)


def run_dir(outdir: Path) -> Path:
    runs = [p for p in outdir.iterdir() if p.is_dir()]
    assert len(runs) == 1, f"rerunning the same command must continue the same run, found {runs}"
    return runs[0]


def digests(value, prefix: str = "") -> dict[str, str]:
    """{path: sha256 of the tensor's bytes (with dtype and shape) or repr of the value}, for a readable diff."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in digests(item, f"{prefix}/{key}").items()}
    if isinstance(value, (list, tuple)):
        return {k: v for i, item in enumerate(value) for k, v in digests(item, f"{prefix}/{i}").items()}
    if isinstance(value, torch.Tensor):
        raw = value.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        return {prefix: f"{value.dtype}{list(value.shape)}:{hashlib.sha256(raw).hexdigest()[:16]}"}
    return {prefix: repr(value)}


def assert_identical(a: dict, b: dict) -> None:
    for key in COMPARED:
        da, db = digests(a[key], key), digests(b[key], key)
        differing = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
        assert not differing, f"{len(differing)} entries differ, first: {differing[:5]}"


def tiny_archive(root: Path) -> Path:
    """16 RGB images of 8x8 pixels (smooth random blobs), built into ROOT/tiny.zip by ganforge's dataset tool."""
    (root / "src").mkdir()
    rng = np.random.default_rng(0)
    for i in range(16):
        coarse = rng.integers(0, 256, size=(2, 2, 3), dtype=np.uint8)
        PIL.Image.fromarray(coarse).resize((8, 8), PIL.Image.BILINEAR).save(root / "src" / f"{i:02d}.png")
    build(root / "src", root / "tiny.zip", BuildOptions(resolution=8, workers=0))
    return root / "tiny.zip"
