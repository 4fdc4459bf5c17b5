"""--freeze-d N (FreezeD, Mo et al. 2020): D's first N layers from the input keep their weights bit for bit through
training and a resume, hold no optimiser state, and the rest of D trains; too many layers is refused.
--freeze-g-mapping: the same for G's mapping network."""

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.errors import UserError
from ganforge.train import resolve, run
from ganforge.train.build import build_networks

STEP = 0.008  # one batch of 8 images


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("freeze") / "squares", res=16)


def test_frozen_layers_stay_bitwise_through_training_and_a_resume(data, tmp_path):
    options = dict(kimg=2 * STEP, tick=STEP, freeze_d=5, aug="noaug")
    run(resolve(tiny_options(data, tmp_path, **options)))
    run(resolve(tiny_options(data, tmp_path, **options | {"kimg": 4 * STEP})))  # resumes at 2 steps
    cfg = resolve(tiny_options(data, tmp_path, **options))
    _, initial = build_networks(cfg, torch.device("cpu"))  # the seed's D, as the run started with it
    state = checkpoint.load_latest(next(tmp_path.iterdir()) / "checkpoints")
    assert state["loop"]["cur_nimg"] == 32
    frozen = initial.frozen_parameters(5)
    assert {name.split(".")[1] for name in frozen} == {"fromrgb", "conv0", "conv1", "skip"}  # b16's four, b8's conv0
    assert {name.split(".")[0] for name in frozen} == {"b16", "b8"} and len(frozen) == 9  # skip has no bias
    for name, value in initial.state_dict().items():
        same = torch.equal(state["D"][name], value)
        assert same == (name in frozen or "." in name and name.rsplit(".", 1)[1] == "resample_filter"), name
    trained = [name for name, _ in initial.named_parameters() if name not in frozen]
    assert len(state["opt_D"]["state"]) == len(trained)  # Adam holds moments for the trained parameters only


def test_more_layers_than_d_has_are_refused(data, tmp_path):
    with pytest.raises(UserError, match=r"--freeze-d 8: D at 16x16 has 7 layers before its last block"):
        resolve(tiny_options(data, tmp_path, freeze_d=8))


def test_a_frozen_mapping_network_stays_bitwise_and_the_synthesis_trains(data, tmp_path):
    options = dict(kimg=2 * STEP, tick=STEP, freeze_g_mapping=True, aug="noaug")
    run(resolve(tiny_options(data, tmp_path, **options)))
    run(resolve(tiny_options(data, tmp_path, **options | {"kimg": 4 * STEP})))  # resumes at 2 steps
    initial, _ = build_networks(resolve(tiny_options(data, tmp_path, **options)), torch.device("cpu"))
    state = checkpoint.load_latest(next(tmp_path.iterdir()) / "checkpoints")
    assert state["loop"]["cur_nimg"] == 32
    mapping = [name for name, _ in initial.named_parameters() if name.startswith("mapping.")]
    assert len(mapping) == 4  # the tiny preset's two dense layers, weight and bias
    for name, value in initial.named_parameters():
        assert torch.equal(state["G"][name], value) == (name in mapping), name
    assert len(state["opt_G"]["state"]) == len(list(initial.parameters())) - len(mapping)
