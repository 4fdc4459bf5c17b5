import torch
from train_helpers import make_dataset, tiny_options

from ganforge.config import Config
from ganforge.train import resolve
from ganforge.train.build import build


def test_config_json_round_trip_is_exact(tmp_path):
    data = make_dataset(tmp_path / "data")
    cfg = resolve(tiny_options(data, tmp_path / "runs", metrics="swd16k", channels_last=True, gamma=0.5))
    again = Config.from_json(cfg.to_json())
    assert again == cfg
    assert again.run.metrics == ("swd16k",) and again.loss.gamma == 0.5 and again.runtime.channels_last


def test_ada_speed_and_target_reach_the_controller(tmp_path):
    data = make_dataset(tmp_path / "data")
    default = resolve(tiny_options(data, tmp_path / "runs", aug="ada", preset="stylegan2"))
    assert (default.augment.ada_kimg, default.augment.target) == (500, 0.6)  # the paper's speed and target
    tiny = resolve(tiny_options(data, tmp_path / "runs", aug="ada"))
    assert (tiny.augment.ada_kimg, tiny.schedule.kimg) == (20, 0.032)  # its row's: within its 40 kimg
    cfg = resolve(tiny_options(data, tmp_path / "runs", aug="ada", ada_kimg=0.1, target=0.3))
    t, _, _ = build(cfg, torch.device("cpu"))
    assert (t.ada.speed_kimg, t.ada.target) == (0.1, 0.3)


def test_networks_built_for_cpu_training_take_the_cpu_kernels_and_generic_ones_do_not(tmp_path):
    from ganforge.nets.configured import make_networks
    from ganforge.train.build import build_networks

    data = make_dataset(tmp_path / "data")
    cfg = resolve(tiny_options(data, tmp_path / "runs"))
    _, D = build_networks(cfg, torch.device("cpu"))
    assert D.channels_last_input  # the image enters channels-last, the layout of the Winograd convolutions
    assert not make_networks(cfg)[1].channels_last_input  # a network as built for export or import: the reference
