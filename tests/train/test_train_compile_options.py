"""`--compile [off|default|max-autotune|reduce-overhead]`: the flag alone is torch.compile's default mode (as when it
was a switch), Python callers' True/False and older config.json files' true/false still read, and the modes that
cannot run are refused with the fix. (What each mode does in training: test_train_compiled_phases.py; inductor on the
CPU: test_train_compile_cpu.py, `-m benchmark`; CUDA graphs: test_train_cuda.py, `-m cuda`.)"""

import json

import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args

from ganforge.bench.options import BenchOptions
from ganforge.cli import main
from ganforge.config import Config, maths_fields, upgrade
from ganforge.devices import COMPILE_MODES, describe_kernels
from ganforge.errors import UserError
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve

ON_CPU = "--compile reduce-overhead: its CUDA graphs exist only on CUDA GPUs; on cpu it would compile as --compile "
ON_CPU += "default, so pass that (or max-autotune, which tunes the CPU's kernels)"


def _resolve(device_type: str = "cpu", **given) -> Config:
    given = {"precision": "fp32"} | given  # `auto` on CUDA would ask the device
    options = TrainOptions(data="/data/d.zip", outdir="/nonexistent/runs", preset="tiny", **given)
    return resolve(options, Facts(DatasetFacts(resolution=32, channels=3, label_dim=0, name="d"), 1, device_type))


def _problems(device_type: str = "cpu", **given) -> list[str]:
    with pytest.raises(UserError) as caught:
        _resolve(device_type, **given)
    return list(caught.value.problems)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("compile-options") / "squares")


@pytest.mark.parametrize("args, mode", [([], "off"), (["--compile"], "default"), (["--compile", "--kimg", "0.016"],
                                        "default"), (["--compile", "max-autotune"], "max-autotune"),
                                        (["--compile=off"], "off")])  # fmt: skip
def test_the_flag_alone_is_the_default_mode_and_a_mode_may_follow_it(data, tmp_path, args, mode):
    done = CliRunner().invoke(main, [*tiny_args(data, tmp_path / "runs"), *args, "--dry-run"])
    assert done.exit_code == 0, done.output
    config = json.loads(done.stdout)
    assert config["runtime"]["compile"] == mode
    compiled = mode != "off"
    assert describe_kernels("auto", "cpu", compiled) in done.stderr
    assert Config.from_dict(config).runtime.compiling is compiled


def test_reduce_overhead_on_a_cpu_is_refused_in_train_and_bench_with_the_fix(data, tmp_path):
    done = CliRunner().invoke(main, [*tiny_args(data, tmp_path / "runs"), "--compile", "reduce-overhead", "--dry-run"])
    assert done.exit_code == 2 and ON_CPU in done.output
    bench = ["bench", "--cfg", "tiny", "--resolution", "8", "--device", "cpu", "--steps", "1", "--compile",
             "reduce-overhead"]  # fmt: skip
    done = CliRunner().invoke(main, bench)
    assert done.exit_code == 2 and ON_CPU in done.output and not (tmp_path / "runs").exists()
    assert BenchOptions(compile="reduce-overhead").compile == "reduce-overhead"


def test_every_mode_resolves_on_cuda_and_only_reduce_overhead_is_refused_on_a_cpu():
    for mode in COMPILE_MODES:
        assert _resolve("cuda", compile=mode).runtime.compile == mode
        if mode != "reduce-overhead":
            assert _resolve("cpu", compile=mode).runtime.compile == mode
    assert _problems(compile="reduce-overhead") == [ON_CPU]


@pytest.mark.parametrize("mode", ["default", "max-autotune", "reduce-overhead"])
def test_what_compiling_refuses_is_refused_in_every_mode(mode):
    fp16_res = _problems("cuda", compile=mode, precision="fp16", fp16_res=2)
    assert fp16_res == ["--compile: not supported together with --fp16-res; drop one of them"]
    assert "drop --compile with --grow" in _problems("cuda", compile=mode, grow=True, grow_from=16)[0]
    assert "--kernels triton:" in _problems("cuda", compile=mode, kernels="triton")[0]


def test_python_callers_true_and_false_are_the_flag_alone_and_not_given():
    assert _resolve(compile=True).runtime.compile == "default"
    assert _resolve(compile=False).runtime.compile == "off"
    unknown = "--compile fast: unknown; use one of off, default, max-autotune, reduce-overhead"
    assert _problems(compile="fast") == [unknown]


def test_config_json_and_checkpoints_of_the_switch_read_as_its_modes():
    """A config.json of a run trained with the switch, and a checkpoint's flattened record (which holds only the maths
    fields, so the switch never reached one): true is the default mode, false off; nothing else changes."""
    today = _resolve(compile="default").to_dict()
    old = json.loads(json.dumps(today))
    for switch, mode in ((True, "default"), (False, "off")):
        old["runtime"]["compile"] = switch
        assert Config.from_dict(old).runtime.compile == mode
        assert upgrade(old) == json.loads(json.dumps(today)) | {"runtime": today["runtime"] | {"compile": mode}}
    assert upgrade({"runtime.compile": True, "loss.gamma": 1.0}) == {"runtime.compile": "default", "loss.gamma": 1.0}
    assert "runtime.compile" not in maths_fields(old)
    assert upgrade({"runtime.compile": "max-autotune"}) == {"runtime.compile": "max-autotune"}
