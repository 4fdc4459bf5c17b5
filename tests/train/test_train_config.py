from train_helpers import make_dataset, tiny_options

from ganforge.config import Config
from ganforge.train import configure


def test_config_json_round_trip_is_exact(tmp_path):
    data = make_dataset(tmp_path / "data")
    cfg = configure(tiny_options(data, tmp_path / "runs", metrics="swd16k", channels_last=True, gamma=0.5))
    again = Config.from_json(cfg.to_json())
    assert again == cfg
    assert again.run.metrics == ("swd16k",) and again.loss.gamma == 0.5 and again.precision.channels_last
