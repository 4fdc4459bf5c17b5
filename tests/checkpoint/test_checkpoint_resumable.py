"""`ganforge checkpoint verify` accepts exactly what a resume accepts.

Each case edits a real checkpoint of a tiny ADA run (tests/checkpoint/conftest.py) and writes it again with `save`,
so that its manifest signs the edit and only the contents can make it fail. Both commands then read it: verify, and
a real resume (`train --resume CKPT`, one step further than the checkpoint). Both refuse it with exit 2 and one line
naming the same entry, or both accept it (the resume trains its step).
"""

import json
import math
import random
import re
import shutil

import numpy as np
import pytest
import torch
from checkpoint_helpers import rehash_config, resave, train_args
from click.testing import CliRunner

from ganforge import checkpoint
from ganforge.checkpoint import resumable
from ganforge.checkpoint.layout import STATE_KEYS
from ganforge.checkpoint.store import FORMAT_VERSION
from ganforge.cli import main

NIMG = 8  # the checkpoint edited: after the run's one step of 8 images


def _set(*path_and_value):
    """An edit that sets state[path...] = value (the value may be a function of the old one)."""
    *path, value = path_and_value

    def edit(state):
        *parents, last = path
        for key in parents:
            state = state[key]
        state[last] = value(state[last]) if callable(value) else value

    return edit


def _delete(*path):
    def edit(state):
        *parents, last = path
        for key in parents:
            state = state[key]
        del state[last]

    return edit


def _config(name, value):
    """Set a stored config field (None: remove it) and sign the config with its hash again."""

    def edit(state):
        if value is None:
            del state["config"][name]
        else:
            state["config"][name] = value
        rehash_config(state)

    return edit


def _network(network, change):
    """Apply `change(tensor) -> tensor | None` to the first tensor of a network (None: remove it)."""

    def edit(state):
        name = next(iter(state[network]))
        new = change(state[network][name])
        if new is None:
            del state[network][name]
        else:
            state[network][name] = new

    return edit


def _moment(network, key, change):
    def edit(state):
        entry = state[f"opt_{network}"]["state"][0]
        entry[key] = change(entry[key])

    return edit


def _progress(nimg):
    return lambda state: (state["loop"].update(cur_nimg=nimg), state["sampler"].update(position=nimg))


def _cuda_state(seed: int, offset: int) -> torch.Tensor:
    return torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8)


def _nan_in(tensor):
    tensor = tensor.clone()
    tensor.view(-1)[0] = math.nan
    return tensor


# (name, edit, what the one error line says; None: a checkpoint both accept, the manifest's nimg)
CASES = [
    ("intact", lambda state: None, None),
    ("an lr the resume replaces", _set("opt_G", "param_groups", 0, "lr", 0.5), None),
    ("steps in a row", _set("loop", "nonfinite_in_a_row", 3), None),
    ("a CUDA state", _set("rng", "cuda", [_cuda_state(5, 8)]), None),
    ("no rng", _delete("rng"), "state.json: the state: has no 'rng'"),
    ("Python's generator in format 3", _set("rng", "python", {"version": 3}),
     "state.json: rng: holds 'python', which this ganforge does not know"),
    ("an unknown entry", _set("extra", 1), "state.json: the state: holds 'extra', which this ganforge does not know"),
    ("torch state of the wrong size", _set("rng", "torch", torch.zeros(5000, dtype=torch.uint8)),
     "tensors.safetensors: rng/torch: must be a uint8 tensor of shape [5056], not a uint8 tensor of shape [5000]"),
    ("torch state invalid", _set("rng", "torch", torch.zeros(5056, dtype=torch.uint8)),
     "tensors.safetensors: rng/torch: is no state of torch's CPU generator (Invalid mt19937 state)"),
    ("torch state of floats", _set("rng", "torch", lambda t: t.float()), "rng/torch: must be a uint8 tensor"),
    ("CUDA state of 15 bytes", _set("rng", "cuda", [torch.zeros(15, dtype=torch.uint8)]),
     "rng/cuda/0: must be a uint8 tensor of shape [16]"),
    ("CUDA offset not a multiple of 4", _set("rng", "cuda", [_cuda_state(5, 6)]),
     "rng/cuda/0: has a Philox offset of 6, not a multiple of 4"),
    ("negative progress", _set("loop", "cur_nimg", -8), "loop/cur_nimg: must be a whole number from 0 to"),
    ("progress a string", _set("loop", "cur_nimg", "8"), "loop/cur_nimg: must be a whole number from 0 to"),
    ("progress not the manifest's", _progress(16), "loop/cur_nimg: is 16, the manifest says 8"),
    ("sampler elsewhere", _set("sampler", "position", 0), "sampler/position: must be the progress, 8, not 0"),
    ("a shard stream", _set("sampler", "stream", {"origin": 4, "world_size": 2}), None),
    ("a shard stream from the future", _set("sampler", "stream", {"origin": 16, "world_size": 1}),
     "sampler/stream/origin: must be a whole number from 0 to 8, not 16"),
    ("a shard stream of no processes", _set("sampler", "stream", {"origin": 0, "world_size": 0}),
     "sampler/stream/world_size: must be a whole number from 1 to"),
    ("a shard stream off its steps", _set("sampler", "stream", {"origin": 3, "world_size": 2}),
     "sampler/stream/origin: is not a whole number of steps of 2 processes before 8"),
    ("a shard stream without its world", _set("sampler", "stream", {"origin": 0}),
     "sampler/stream: has no 'world_size'"),
    ("a sampler entry unknown", _set("sampler", "order", 1), "sampler: holds 'order', which this ganforge"),
    ("pl_mean NaN", _set("loop", "pl_mean", torch.tensor(math.nan)), "loop/pl_mean: holds NaN or infinite values"),
    ("pl_mean float64", _set("loop", "pl_mean", torch.tensor(0.0, dtype=torch.float64)),
     "loop/pl_mean: must be a float32 tensor of shape []"),
    ("pl_mean negative", _set("loop", "pl_mean", torch.tensor(-1.0)), "loop/pl_mean: must be >= 0, not -1"),
    ("steps in a row negative", _set("loop", "nonfinite_in_a_row", -1), "loop/nonfinite_in_a_row: must be a whole"),
    ("no thread count", _delete("loop", "intra_op_threads"), "state.json: loop: has no 'intra_op_threads'"),
    ("no threads", _set("loop", "intra_op_threads", 0), "loop/intra_op_threads: must be a whole number from 1 to"),
    ("G tensor of another shape", _network("G", lambda t: torch.zeros(3)), "tensors.safetensors: G/"),
    ("G tensor missing", _network("G", lambda t: None), "state.json: G: has no "),
    ("G tensor extra", _set("G", "extra.weight", torch.zeros(1)), "state.json: G: holds 'extra.weight'"),
    ("D weight NaN", _network("D", _nan_in), "holds NaN or infinite values"),
    ("G_ema in float64", _network("G_ema", lambda t: t.double()), "must be a float32 tensor"),
    ("Adam moment of another shape", _moment("G", "exp_avg", lambda t: t.flatten()[:1]),
     "tensors.safetensors: opt_G/state/0/exp_avg: must be a float32 tensor of shape"),
    ("Adam second moment negative", _moment("D", "exp_avg_sq", lambda t: -t - 1),
     "opt_D/state/0/exp_avg_sq: holds negative values"),
    ("Adam step NaN", _moment("G", "step", lambda t: torch.tensor(math.nan)), "opt_G/state/0/step: holds NaN"),
    ("Adam with amsgrad", _set("opt_G", "param_groups", 0, "amsgrad", True),
     "opt_G/param_groups/0/amsgrad: must be False (training sets no other), not True"),
    ("Adam over other parameters", _set("opt_D", "param_groups", 0, "params", [0, 1]),
     "opt_D/param_groups/0/params: must list the"),
    ("Adam state of no parameter", _set("opt_G", "state", lambda s: {**s, 999: s[0]}),
     "opt_G/state: holds 999, not a parameter index below"),
    ("Adam with two groups", _set("opt_G", "param_groups", lambda g: g * 2), "must be a list of one group"),
    ("loss scaling under fp32", _set("scaler_G", {"scale": 1.0}),
     "scaler_G: must be empty (the config trains without loss scaling)"),
    ("ADA p above 1", _set("augment", "pipe", "p", torch.tensor(1.5)), "augment/pipe/p: must be from 0 to 1"),
    ("ADA updates past its interval", _set("augment", "ada", "updates", 4), "augment/ada/updates: must be a whole"),
    ("ADA state missing", _set("augment", {}), "augment: has no 'pipe'"),
    ("ADA count negative", _set("augment", "ada", "count", torch.tensor(-1.0)), "augment/ada/count: must be from 0"),
    ("config hash edited", _set("config_hash", "0" * 64), "config_hash: is not the SHA-256 of the stored config"),
    ("config without resolution", _config("data.resolution", None), "config: has no data.resolution"),
    ("config field of another type", _config("model.z_dim", "64"), "config/model.z_dim: '64' is no value of this"),
    ("config field unknown", _config("model.depth", 3), "config: holds 'model.depth', which is no field"),
    ("config of other networks", _config("model.channel_max", 32), "tensors.safetensors: G/"),
    ("config of an unknown G layout", _config("model.g_arch", "dense"), "architecture='dense': must be one of orig"),
    ("config of another D layout", _config("model.d_arch", "orig"), "state.json: D: holds 'b8.skip.weight'"),
    ("config resolution 7", _config("data.resolution", 7), "resolution=7: must be an integer from 8 to 1024"),
    ("config with a million mapping layers", _config("model.mapping_layers", 10**6),
     "mapping_layers=1000000: must be an integer from 1 to 32"),
    ("config under fp16 without a scaler", _config("precision.mode", "fp16"), "scaler_G: has no 'scale'"),
    ("config not an object", _set("config", [1]), "config: must be an object, not a list of 1 items"),
]  # fmt: skip


# Formats 1 and 2 also held Python's and NumPy's global generators (checked, not restored): (name, edit, the error).
FORMAT_2_CASES = [
    ("intact", lambda state: None, None),
    ("a cached Gaussian", _set("rng", "python", "gauss_next", 0.25), None),
    ("no NumPy state", _delete("rng", "numpy"), "rng: has no 'numpy'"),
    ("python position out of range", _set("rng", "python", "state", lambda s: [*s[:-1], 625]),
     "rng/python/state (its position): must be a whole number from 0 to 624, not 625"),
    ("python word too wide", _set("rng", "python", "state", lambda s: [2**32, *s[1:]]),
     "rng/python/state: must hold unsigned 32-bit numbers only"),
    ("python state short", _set("rng", "python", "state", lambda s: s[1:]),
     "rng/python/state: must be a list of 625 numbers, not a list of 624 items"),
    ("python Gaussian a string", _set("rng", "python", "gauss_next", "x"), "rng/python/gauss_next: must be a finite"),
    ("numpy position out of range", _set("rng", "numpy", "pos", 625), "rng/numpy/pos: must be a whole number"),
    ("numpy keys short", _set("rng", "numpy", "keys", lambda k: k[1:]), "rng/numpy/keys: must be a list of 624"),
    ("numpy generator of another kind", _set("rng", "numpy", "kind", "PCG64"), "rng/numpy/kind: must be 'MT19937'"),
]  # fmt: skip


def _format_2_state(state: dict) -> dict:
    """`state` as formats 1 and 2 wrote it: seeded Python and NumPy generator states besides torch's, and no thread
    count in the loop's entries (format 4 added it)."""
    del state["loop"]["intra_op_threads"]
    version, words, gauss_next = random.Random(1).getstate()
    kind, keys, pos, has_gauss, cached = np.random.RandomState(2).get_state(legacy=True)
    state["rng"] |= {
        "python": {"version": version, "state": list(words), "gauss_next": gauss_next},
        "numpy": {"kind": kind, "keys": keys.tolist(), "pos": pos, "has_gauss": has_gauss, "cached_gaussian": cached},
    }
    return state


@pytest.mark.parametrize(("name", "edit", "expected"), FORMAT_2_CASES, ids=[case[0] for case in FORMAT_2_CASES])
def test_a_format_2_checkpoints_python_and_numpy_states_are_checked(tiny_run, name, edit, expected):
    state = _format_2_state(checkpoint.load(tiny_run[1] / "checkpoints" / f"ckpt-{NIMG:09d}"))
    edit(state)
    if expected is None:
        resumable.check(state, {"nimg": NIMG, "format_version": 2})
    else:
        with pytest.raises(checkpoint.InvalidCheckpoint, match=re.escape(expected)):
            resumable.check(state, {"nimg": NIMG, "format_version": 2})


def test_a_checkpoint_holds_the_layouts_entries_in_order_and_each_one_is_checked(tiny_run):
    """What `capture` wrote is the layout's entries in its order, and a value no writer stores in any of them is
    refused naming that entry (a new entry without a check would pass)."""
    state = checkpoint.load(tiny_run[1] / "checkpoints" / f"ckpt-{NIMG:09d}")
    assert list(state) == list(STATE_KEYS)
    resumable.check(state, {"nimg": NIMG, "format_version": FORMAT_VERSION})
    for key in STATE_KEYS:
        with pytest.raises(checkpoint.InvalidCheckpoint, match=f": {key}: "):
            resumable.check(state | {key: "x"}, {"nimg": NIMG, "format_version": FORMAT_VERSION})


@pytest.fixture(scope="module")
def outcomes(tiny_run, tmp_path_factory):
    """For each case: (verify's exit code and stderr, resume's exit code and stderr)."""
    data, run = tiny_run
    original = checkpoint.load(run / "checkpoints" / f"ckpt-{NIMG:09d}")
    found = {}
    for i, (name, edit, _) in enumerate(CASES):
        folder = tmp_path_factory.mktemp(f"case{i}")
        state = _deep_copy(original)
        edit(state)
        path = resave(state, folder / "checkpoints", NIMG)
        verify = CliRunner().invoke(main, ["checkpoint", "verify", str(path)])
        resume = CliRunner().invoke(main, train_args(data, folder / "out", 0.016, "--resume", str(path)))
        found[name] = (verify.exit_code, verify.stderr, resume.exit_code, resume.stderr, path, resume.stdout)
    return found


def _deep_copy(value):
    if isinstance(value, dict):
        return {key: _deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_deep_copy(item) for item in value]
    if isinstance(value, torch.Tensor):
        return value.clone()
    return value


@pytest.mark.parametrize(("name", "expected"), [(name, expected) for name, _, expected in CASES])
def test_verify_and_resume_agree(outcomes, name, expected):
    verify_code, verify_err, resume_code, resume_err, path, resumed = outcomes[name]
    if expected is None:
        assert (verify_code, resume_code) == (0, 0), (verify_err, resume_err)
        assert "error: " not in verify_err + resume_err
        assert f"from {path} at 0.008 kimg" in resumed and "done: 0.016 kimg" in resumed, resumed  # one step further
        return
    assert (verify_code, resume_code) == (2, 2), (verify_err, resume_err)
    assert "Traceback" not in verify_err + resume_err
    assert len(verify_err.splitlines()) == 1 and len(resume_err.splitlines()) == 1, (verify_err, resume_err)
    assert verify_err.startswith(f"error: checkpoint {path}: ") and expected in verify_err, verify_err
    assert resume_err.startswith(verify_err.rstrip("\n")), (verify_err, resume_err)  # the same line, then advice


def test_a_fp16_checkpoints_loss_scaler_state_is_what_gradscaler_writes(tiny_run):
    """Loss scaling runs on CUDA only, so no CPU run writes a scaler state: this one is torch's own."""
    state = checkpoint.load(tiny_run[1] / "checkpoints" / f"ckpt-{NIMG:09d}")
    state["config"]["precision.mode"] = "fp16"
    rehash_config(state)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    state["scaler_G"] = state["scaler_D"] = scaler.state_dict()
    resumable.check(state, {"nimg": NIMG, "format_version": FORMAT_VERSION})
    state["scaler_D"] = {**scaler.state_dict(), "_growth_tracker": scaler.state_dict()["growth_interval"]}
    with pytest.raises(checkpoint.InvalidCheckpoint, match="scaler_D/_growth_tracker: must be a whole number"):
        resumable.check(state, {"nimg": NIMG, "format_version": FORMAT_VERSION})


def test_a_run_continued_by_the_same_command_skips_what_verify_refuses(tiny_run, tmp_path):
    """Rerunning the command continues from the newest checkpoint that verifies, after a warning naming the other."""
    data, run = tiny_run
    outdir = tmp_path / "runs"
    copy = shutil.copytree(run, outdir / run.name)
    state = checkpoint.load(copy / "checkpoints" / f"ckpt-{NIMG:09d}")
    del state["rng"]["torch"]
    resave(state, copy / "checkpoints", NIMG)
    result = CliRunner().invoke(main, train_args(data, outdir, 0.008))
    assert result.exit_code == 0, result.output
    assert f"warning: skipping checkpoint {copy / 'checkpoints' / 'ckpt-000000008'}: state.json: rng: has no" in (
        result.stderr
    )
    assert f"resuming {copy} from {copy / 'checkpoints' / 'ckpt-000000000'} at 0 kimg" in result.output


def _nested(fields: dict) -> dict:
    nested = {}
    for name, value in fields.items():
        *sections, last = name.split(".")
        place = nested
        for section in sections:
            place = place.setdefault(section, {})
        place[last] = value
    return nested


def _version_1(path):
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1, "created": 1.7e9}))
    return path


def test_a_version_1_checkpoint_with_its_whole_nested_config_verifies_and_resumes(tiny_run, tmp_path):
    """Format 1 stored the whole Config, nested (paths and run options too), and hashed its maths fields by the rules
    of its day, and Python's and NumPy's generators besides torch's: verify and resume accept it, as they did, and the
    resume leaves those two generators as it found them."""
    data, run = tiny_run
    state = _format_2_state(checkpoint.load(run / "checkpoints" / f"ckpt-{NIMG:09d}"))
    config = _nested(state["config"])
    config["data"] |= {"path": str(data), "workers": 0}
    config["run"] = {"outdir": "somewhere", "resume": "auto", "keep_last": 3}
    state |= {"config": config, "config_hash": "hashed by the rules of that day"}
    path = _version_1(resave(state, tmp_path / "checkpoints", NIMG))
    assert CliRunner().invoke(main, ["checkpoint", "verify", str(path)]).exit_code == 0
    resumed = CliRunner().invoke(main, train_args(data, tmp_path / "out", 0.016, "--resume", str(path)))
    assert resumed.exit_code == 0 and "done: 0.016 kimg" in resumed.stdout, resumed.output
    assert random.getstate() != random.Random(1).getstate()
    assert not np.array_equal(np.random.get_state(legacy=True)[1], np.random.RandomState(2).get_state(legacy=True)[1])
    config["model"]["z_dim"] = "64"
    _version_1(resave(state, tmp_path / "checkpoints", NIMG))
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(path)])
    assert result.exit_code == 2 and "config/model.z_dim: '64' is no value of this field" in result.stderr
