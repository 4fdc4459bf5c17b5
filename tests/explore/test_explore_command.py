"""The `ganforge generate` command sent with each image is written through generate's own option declarations: only
the flags whose values differ from generate's defaults, in the order declared, each value as the flag takes it; read
back by the command line, it gives exactly the options the request was parsed into."""

import shlex
from pathlib import Path

import pytest

from ganforge.cli import main
from ganforge.explore.command import generate_command
from ganforge.explore.queries import parse_query
from ganforge.generate.options import GenerateOptions

NETWORKS = [Path("nets/a b.safetensors"), Path("sg3.pkl")]
CASES = {
    "image": ("image", dict(seed=3, trunc=0.5, **{"trunc-cutoff": 2, "noise-mode": "random", "class": 0})),
    "label": ("image", dict(seed=4, label="1e-7,2,0.1")),
    "grid page": ("grid", dict(page=3, grid="2x3")),
    "style mix": ("mix", dict(seed=5, source=9, **{"mix-layers": "0-3,5", "class": 1})),
    "interpolation": ("interp", dict(seeds="0,1,2,7,8", interp=3, **{"class": 0})),
    "stylegan3 moved": (
        "image",
        dict(net=1, seed=2, translate="0,0.3333333333333333", rotate="-12.3456789", trunc="1"),
    ),
}
WRITTEN = {
    "image": "--seeds 3 --trunc 0.5 --trunc-cutoff 2 --class 0 --noise-mode random",
    "label": "--seeds 4 --label 1e-07,2.0,0.1",
    "grid page": "--seeds 18-23 --grid 2x3",
    "style mix": "--style-mix 5 9 --mix-cells --mix-layers 0-3,5 --class 1",
    "interpolation": "--seeds 0-2,7-8 --interp 3 --interp-format {format} --class 0",
    "stylegan3 moved": "--seeds 2 --translate 0.0,0.3333333333333333 --rotate -12.3456789",
}


def _options(case: str) -> GenerateOptions:
    endpoint, params = CASES[case]
    return parse_query(endpoint, [(name, str(value)) for name, value in params.items()], NETWORKS, "cpu").options


@pytest.mark.parametrize("case", CASES)
def test_the_command_names_only_what_differs_from_generates_defaults(case):
    options = _options(case)
    network = shlex.quote(str(options.network))
    flags = WRITTEN[case].format(format=options.interp_format)
    assert generate_command(options) == f"ganforge generate --network {network} --outdir out --device cpu {flags}"


@pytest.mark.parametrize("case", CASES)
def test_the_command_line_reads_the_command_back_into_the_same_options(case):
    options = _options(case)
    words = shlex.split(generate_command(options))
    command = main.commands["generate"]
    params = command.make_context("generate", words[2:]).params
    assert GenerateOptions.parse(**params) == options
