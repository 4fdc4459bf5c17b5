"""A hostile server against every command that reads remote data: `dataset info`, `dataset verify`, `train --data`,
`metrics --data` (and `dataset build`, which reads local sources only), over HTTP and S3.

The server (tests/hostile_server.py) serves a small shard dataset well or badly as the URL's first segment says;
here the modes that hold a process (silent) or would fill its memory (endless answers, 2**50 bytes declared, a gzip
bomb), and a server that is down, through each command (tests/data/test_data_remote.py checks every mode's message
in-process). Every case must end in one `error:` line naming the URL and what the server did, exit 2, within seconds
(GANFORGE_REMOTE_LIMITS shortens the time-outs, as a user on a fast network could) and well inside the harness's
3 GB address space.
"""

from pathlib import Path

import numpy as np
import pytest
from hostile_harness import Case, assert_all_rejected
from PIL import Image

from ganforge.data import build
from hostile_server import hostile_server

LIMITS = "connect=2,read=0.3,request=1,patience=0.5"
MAX_RSS_MB = 1500  # the worker holds torch and a tiny network; a buffered endless answer would pass 3 GB


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    """8 images of 8 px as PNG shards of about 2 KB (one or two images each)."""
    root = tmp_path_factory.mktemp("remote")
    source = root / "images"
    source.mkdir()
    for index in range(8):
        pixels = np.random.default_rng(index).integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(source / f"{index}.png")
    options = build.BuildOptions(transform="none", workers=0, format="shards", shard_size="2KB")
    build.build(source, root / "set", options)
    return root / "set"


def _cases(url: str, down: str, root: Path) -> list[Case]:
    outdir, fakes = root / "runs", root / "fakes"
    train = ("--outdir", str(outdir), "--cfg", "tiny", "--kimg", "0.008", "--batch", "8", "--workers", "0",
             "--device", "cpu", "--no-report")  # fmt: skip
    metrics = ("--fake", str(fakes), "--metrics", "swd16k", "--workers", "0", "--device", "cpu")
    return [
        Case("info: silent", ("dataset", "info", f"{url}/silent/"), seconds=60),  # imports torch: time for that
        Case("info: 2**50 bytes, no ranges", ("dataset", "info", f"{url}/wrong-length.json/")),
        Case("info: endless index", ("dataset", "info", f"{url}/endless.json/")),
        Case("info: gzip bomb", ("dataset", "info", f"{url}/gzip-bomb/")),
        Case("info: server down", ("dataset", "info", f"{down}/ok/")),
        Case("verify: endless shard", ("dataset", "verify", f"{url}/endless.tar/", "--workers", "0")),
        Case("verify: s3 endless shard", ("dataset", "verify", "s3://endless.tar/", "--workers", "0")),
        Case("train: endless shard", ("train", "--data", f"{url}/endless.tar/", *train), seconds=30),
        Case("metrics: endless shard", ("metrics", "--data", f"{url}/endless.tar/", *metrics), seconds=30),
        Case(
            "build: a URL",
            ("dataset", "build", f"{url}/ok/", str(root / "out.zip"), "--transform", "none"),
            absent=("out.zip",),
        ),
    ]


def test_a_hostile_server_is_refused_in_one_line(shards, tmp_path, monkeypatch):
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    for index in range(4):
        Image.fromarray(np.full((8, 8, 3), 40 * index, dtype=np.uint8)).save(fakes / f"{index}.png")
    with hostile_server(shards) as server:
        down = server.url
    with hostile_server(shards) as server:
        environment = {"GANFORGE_REMOTE_LIMITS": LIMITS, "AWS_ENDPOINT_URL": server.url, "AWS_ACCESS_KEY_ID": "x",
                       "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
        for key, value in environment.items():
            monkeypatch.setenv(key, value)
        outcomes = assert_all_rejected(_cases(server.url, down, tmp_path), tmp_path)
    for outcome in outcomes:
        if outcome.name != "build: a URL":
            assert any(url in outcome.stderr for url in (server.url, down, "s3://")), outcome
        assert outcome.peak_rss_mb < MAX_RSS_MB, outcome
