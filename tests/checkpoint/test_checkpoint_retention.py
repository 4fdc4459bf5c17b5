"""(f) Retention keeps exactly what --keep-last, --keep-every and --keep-max-age say."""

import os

import pytest

from ganforge import checkpoint
from ganforge.checkpoint.retention import Entry, Retention, select_deletions
from ganforge.errors import UserError

DAY = 86400.0
NOW = 1_000_000_000.0


def _entries(kimgs, ages_days=None):
    ages = ages_days or [0.0] * len(kimgs)
    nimgs = [round(k * 1000) for k in kimgs]
    return [Entry(f"ckpt-{n:09d}", n, NOW - a * DAY) for n, a in zip(nimgs, ages, strict=True)]


def _kept(entries, retention, protect=None):
    protect = protect or entries[-1].name
    doomed = set(select_deletions(entries, retention, protect, NOW))
    return [e.nimg / 1000 for e in entries if e.name not in doomed]


def test_keep_last():
    assert _kept(_entries(range(10, 110, 10)), Retention(keep_last=3)) == [80, 90, 100]
    assert _kept(_entries([10, 20]), Retention(keep_last=3)) == [10, 20]
    assert _kept(_entries(range(1, 6)), Retention(keep_last=1)) == [5]


def test_keep_every_keeps_the_first_at_or_after_each_multiple_for_good():
    kimgs = [4, 48, 96, 100, 104, 148, 196, 204, 252, 300, 304]
    # multiples of 100: first at/after 100 -> 100, 200 -> 204, 300 -> 300; plus the last 2
    assert _kept(_entries(kimgs), Retention(keep_last=2, keep_every_kimg=100)) == [100, 204, 300, 304]
    # as training goes on, the chosen ones stay
    assert _kept(_entries(kimgs + [352, 400.5]), Retention(keep_last=1, keep_every_kimg=100)) == [100, 204, 300, 400.5]


def test_keep_max_age_keeps_the_young_rest():
    entries = _entries([10, 20, 30, 40, 50, 60], ages_days=[9, 6, 4, 3, 2, 1])
    assert _kept(entries, Retention(keep_last=2, keep_max_age_days=5)) == [30, 40, 50, 60]
    assert _kept(entries, Retention(keep_last=2)) == [50, 60]
    both = Retention(keep_last=1, keep_every_kimg=20, keep_max_age_days=3.5)
    assert _kept(entries, both) == [20, 40, 50, 60]


def test_never_removes_the_checkpoint_just_written():
    # Resumed from 20 because 30 did not verify; the new 25 is the newest valid one even though 30 sorts later.
    entries = _entries([10, 20, 30]) + [Entry("ckpt-000025000", 25000, NOW)]
    doomed = select_deletions(entries, Retention(keep_last=1), "ckpt-000025000", NOW)
    assert "ckpt-000025000" not in doomed and sorted(doomed) == ["ckpt-000010000", "ckpt-000020000"]


def test_save_applies_retention_after_commit_with_real_ages(tmp_path):
    keep = Retention(keep_last=2, keep_every_kimg=2)
    for nimg in (1000, 2000, 3000, 4000, 5000):
        checkpoint.save(tmp_path, {"n": nimg}, tag=str(nimg), retention=keep)
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == [
        "ckpt-000002000",
        "ckpt-000004000",
        "ckpt-000005000",
    ]
    manifest_path = tmp_path / "ckpt-000004000" / "manifest.json"
    ten_days_ago = manifest_path.stat().st_mtime - 10 * DAY  # a checkpoint's age is its manifest's
    os.utime(manifest_path, (ten_days_ago, ten_days_ago))
    checkpoint.save(tmp_path, {"n": 6000}, tag="6000", retention=Retention(keep_last=1, keep_max_age_days=1))
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == [
        "ckpt-000002000",
        "ckpt-000005000",
        "ckpt-000006000",
    ]


def test_unreadable_folders_are_left_alone(tmp_path):
    (tmp_path / "ckpt-000000500").mkdir()  # no manifest: for a person to look at, never deleted by retention
    for nimg in (1000, 2000):
        checkpoint.save(tmp_path, {"n": nimg}, tag=str(nimg), retention=Retention(keep_last=1))
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["ckpt-000000500", "ckpt-000002000"]


def test_bad_flags_are_all_reported():
    with pytest.raises(UserError) as info:
        Retention(keep_last=0, keep_every_kimg=-1, keep_max_age_days=0)
    assert [p.split(":")[0] for p in info.value.problems] == ["--keep-last", "--keep-every", "--keep-max-age"]
