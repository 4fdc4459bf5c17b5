"""Any length a user types (--kimg, --tick, --d-warmup-kimg, --lr-warmup-kimg, --lr-steps) is trained rounded up to
whole global batches, said once, and stored rounded, so the config hash and a resume agree with what was trained."""

import math
from fractions import Fraction

import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge.cli import main
from ganforge.config import config_hash
from ganforge.train import resolve
from ganforge.train.resolver import round_up_to_batches


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("lengths") / "squares")


def _exact_round_up(kimg: float, batch: int) -> float:
    """The reference: the typed decimal (its shortest repr, as the user wrote it) in exact rational arithmetic."""
    images = Fraction(repr(kimg)) * 1000
    return math.ceil(images / batch) * batch / 1000


@pytest.mark.parametrize("batch", [1, 6, 8, 16, 32, 64, 96])
def test_round_up_to_batches_equals_exact_arithmetic(batch):
    typed = [0.001, 0.01, 0.1, 0.136, 0.5, 1, 1.008, 2.5, 25, 100, 100.032, 0.7, 12.345, 25000, 2.007, 2.024, 1.001]
    for kimg in typed:
        assert round_up_to_batches(kimg, batch) == _exact_round_up(kimg, batch), (kimg, batch)


def test_typed_lengths_are_rounded_up_noted_and_hashed_as_trained(data, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path, kimg=1, batch=16, tick=0.1, lr_warmup_kimg=0.01, d_warmup_kimg=0.02,
                               lr_schedule="step", lr_steps="0.5,0.64"))  # fmt: skip
    s, o = cfg.schedule, cfg.optim
    assert (s.kimg, s.tick_kimg, s.d_warmup_kimg, o.lr_warmup_kimg, o.lr_steps) == (1.008, 0.112, 0.032, 0.016,
                                                                                    (0.512, 0.64))  # fmt: skip
    assert s.rounded == (
        "--kimg 1 rounded up to 1.008 kimg: 63 whole batches of 16",
        "--tick 0.1 rounded up to 0.112 kimg: 7 whole batches of 16",
        "--d-warmup-kimg 0.02 rounded up to 0.032 kimg: 2 whole batches of 16",
        "--lr-warmup-kimg 0.01 rounded up to 0.016 kimg: 1 whole batch of 16",
        "--lr-steps 0.5 rounded up to 0.512 kimg: 32 whole batches of 16",
    )  # 0.64 is 40 whole batches already: not noted
    exact = resolve(tiny_options(data, tmp_path, kimg=1.008, batch=16, tick=0.112, lr_warmup_kimg=0.016,
                                 d_warmup_kimg=0.032, lr_schedule="step", lr_steps="0.512,0.64"))  # fmt: skip
    assert exact.schedule.rounded == () and config_hash(exact) == config_hash(cfg)
    assert config_hash(resolve(tiny_options(data, tmp_path, batch=16, lr_warmup_kimg=0.017))) != config_hash(cfg)


def test_dry_run_says_each_rounding_once(data, tmp_path):
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path, kimg=0.03), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("rounded up") == 1
    assert "derived: --kimg 0.03 rounded up to 0.032 kimg: 4 whole batches of 8\n" in result.stderr
