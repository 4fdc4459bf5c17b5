import json
import random

import numpy as np
import pytest
import torch
from checkpoint_helpers import assert_same, make_state, train_a_little

from ganforge import checkpoint


def test_realistic_state_round_trips_bitwise_with_int_keys_and_tuples(tmp_path):
    state = make_state()
    path = checkpoint.save(tmp_path, state, tag="1000", retention=checkpoint.Retention())
    assert path == tmp_path / "ckpt-000001000"
    loaded = checkpoint.load(path, check_state=False)
    assert_same(state, loaded)
    assert list(loaded["opt_G"]["state"]) == [0, 1, 2, 3]  # int parameter indices, not "0".."3"
    assert loaded["opt_G"]["param_groups"][0]["betas"] == (0.0, 0.99)
    assert_same(checkpoint.load_latest(tmp_path, check_state=False), loaded)
    assert (tmp_path / "latest").read_text().strip() == path.name


def test_odd_values_round_trip(tmp_path):
    base = torch.arange(12, dtype=torch.float32)
    odd = {
        "nonfinite": [float("nan"), float("inf"), float("-inf"), -0.0, 1e-310],
        "dtypes": [
            torch.ones(2, dtype=d) for d in (torch.bfloat16, torch.float16, torch.int64, torch.uint8, torch.bool)
        ],
        "scalar": torch.tensor(3.5, dtype=torch.float64),
        "empty": [torch.empty(0), torch.empty(0, 3), {}, [], ()],
        "views": {"whole": base, "slice": base[2:5], "transposed": base.view(3, 4).t()},
        "mixed_keys": {1: "int", "1": "str", "__tensor__": "marker-looking key"},
        "nested": {0: {1: (2, [3, {"a": None}])}},
        "huge_int": 2**70,
        "same/name": torch.ones(1),
        "same": {"name": torch.zeros(1)},  # flattens to the same readable tensor name as the entry above
        "unicode": "ümlaut ✓",
    }
    path = checkpoint.save(tmp_path, odd, tag="0", retention=checkpoint.Retention())
    loaded = checkpoint.load(path, check_state=False)
    assert_same(odd, loaded)


def test_loaded_optimizer_continues_exactly_like_the_original(tmp_path):
    net, opt = train_a_little(0)
    path = checkpoint.save(
        tmp_path, {"net": net.state_dict(), "opt": opt.state_dict()}, tag="5", retention=checkpoint.Retention()
    )
    loaded = checkpoint.load(path, check_state=False)
    net2, opt2 = train_a_little(7)  # different weights and moments, overwritten from the checkpoint
    net2.load_state_dict(loaded["net"])
    opt2.load_state_dict(loaded["opt"])
    x = torch.randn(6, 4)
    for model, optimizer in ((net, opt), (net2, opt2)):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
    assert_same(net.state_dict(), net2.state_dict())
    assert_same(opt.state_dict(), opt2.state_dict())


def test_rng_capture_restore_through_a_checkpoint(tmp_path):
    torch.rand(5)
    path = checkpoint.save(tmp_path, {"rng": checkpoint.capture_rng()}, tag="1", retention=checkpoint.Retention())
    expected = torch.rand(3).tolist()
    torch.manual_seed(99)
    checkpoint.restore_rng(checkpoint.load(path, check_state=False)["rng"])
    assert torch.rand(3).tolist() == expected


def test_what_other_threads_draw_from_pythons_and_numpys_generators_is_not_captured():
    """Training draws from torch's generators alone; Python's `random` and NumPy's global generator are any thread's
    (a client library's retry jitter), so recording them made a checkpoint's bytes depend on what ran beside it."""
    before = checkpoint.capture_rng()
    random.random(), np.random.standard_normal()
    assert_same(checkpoint.capture_rng(), before)
    torch.rand(1)
    assert not torch.equal(checkpoint.capture_rng()["torch"], before["torch"])


def test_unsupported_values_fail_at_save_naming_where(tmp_path):
    with pytest.raises(TypeError, match="augment/p"):
        checkpoint.save(tmp_path, {"augment": {"p": np.int64(3)}}, tag="1", retention=checkpoint.Retention())
    with pytest.raises(TypeError, match="key"):
        checkpoint.save(tmp_path, {"loop": {(1, 2): 3}}, tag="1", retention=checkpoint.Retention())
    assert checkpoint.list_checkpoints(tmp_path) == []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_newer_checkpoint_wins_and_same_tag_replaces(tmp_path):
    for nimg in (64, 1000, 128):
        checkpoint.save(tmp_path, make_state(nimg), tag=str(nimg), retention=checkpoint.Retention(keep_last=5))
    assert checkpoint.load_latest(tmp_path, check_state=False)["loop"]["cur_nimg"] == 1000
    replacement = make_state(1000)
    replacement["config_hash"] = "replaced"
    checkpoint.save(tmp_path, replacement, tag="1000", retention=checkpoint.Retention(keep_last=5))
    assert checkpoint.load_latest(tmp_path, check_state=False)["config_hash"] == "replaced"
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == [
        "ckpt-000000064",
        "ckpt-000000128",
        "ckpt-000001000",
    ]


def test_missing_folder_means_nothing_to_resume(tmp_path):
    assert checkpoint.load_latest(tmp_path / "nope", check_state=False) is None
    assert checkpoint.find_latest(tmp_path, check_state=False) is None


def test_the_same_state_gives_the_same_bytes(tmp_path):
    """Repeating a run must reproduce its checkpoints to the byte (`md5sum` equal): no clock or host in any file."""
    keep = checkpoint.Retention(keep_last=1)
    state = make_state(1000)
    first = checkpoint.save(tmp_path / "a", state, tag="1000", retention=keep)
    second = checkpoint.save(tmp_path / "b", make_state(1000), tag="1000", retention=keep)
    for name in ("tensors.safetensors", "state.json", "manifest.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_a_version_1_manifest_with_its_created_time_still_loads(tmp_path):
    path = checkpoint.save(tmp_path, make_state(1000), tag="1000", retention=checkpoint.Retention())
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1, "created": 1.7e9}))
    assert_same(checkpoint.load(path, check_state=False), make_state(1000))
