"""Tiny networks for the explore tests, the real `ganforge explore` process started on them, and plain HTTP."""

import contextlib
import os
import select
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.nets import Generator, StyleGAN3Generator
from ganforge.snapshot import save_snapshot

SG2_ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2)
SG3_ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16, num_layers=4)
START_TIMEOUT_S = 60


def tiny_networks(folder: Path) -> dict[str, Path]:
    """A conditional StyleGAN2 (3 classes) with noise and w_avg that change its images, a second one of other
    weights (two snapshots of one run, side by side), and a StyleGAN3, as snapshots."""
    paths = {}
    for name, seed in (("sg2", 0), ("sg2b", 1)):
        torch.manual_seed(seed)
        G = Generator(**SG2_ARCH, c_dim=3, img_channels=3)
        with torch.no_grad():
            for parameter_name, p in G.named_parameters():
                if parameter_name.endswith("noise_strength"):
                    p.fill_(0.5)
            G.mapping.w_avg.normal_()
        paths[name] = folder / f"{name}.safetensors"
        save_snapshot(paths[name], G, {})
    torch.manual_seed(2)
    save_snapshot(folder / "sg3.safetensors", StyleGAN3Generator(**SG3_ARCH), {})
    paths["sg3"] = folder / "sg3.safetensors"
    return paths


@contextlib.contextmanager
def explore_server(*args: str):
    """`ganforge explore ARGS --port 0 --device cpu` in a subprocess -> (base URL as printed, the process); stopped
    on the way out, when what it wrote to stderr is left in the process's `stderr_text`."""
    command = [sys.executable, "-m", "ganforge", "explore", *args, "--port", "0", "--device", "cpu"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        yield _printed_url(proc), proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr_text = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()


def _printed_url(proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("ganforge explore: http://"):
                return line.split()[2]
        if proc.poll() is not None:
            raise AssertionError(f"ganforge explore exited {proc.returncode}: {proc.stderr.read()}")
    raise AssertionError("ganforge explore printed no URL in time")


def fetch(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """(status, headers by lower-case name, body) of a GET with these `headers` (Host too), errors included."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def get(server: str, endpoint: str, **params) -> tuple[int, dict, bytes]:
    """fetch of /api/ENDPOINT with `params` (underscores in their names written as dashes: trunc_cutoff)."""
    query = urllib.parse.urlencode({name.replace("_", "-"): value for name, value in params.items()})
    return fetch(f"{server}api/{endpoint}?{query}")


def generated(command: str, outdir: Path) -> dict[str, bytes]:
    """The files a `ganforge generate` command line writes, run with its --outdir replaced by `outdir`."""
    words = shlex.split(command)
    assert words[:2] == ["ganforge", "generate"], words
    words[words.index("--outdir") + 1] = str(outdir)
    result = CliRunner().invoke(main, words[1:])
    assert result.exit_code == 0, result.output
    return {path.name: path.read_bytes() for path in outdir.iterdir()}
