"""`ganforge checkpoint diff` of snapshots: two snapshots whole (metadata and tensors), a snapshot against a
checkpoint's G_ema, and files that are not what they claim refused through the snapshot readers."""

import shutil

import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.nets import Discriminator, Generator
from ganforge.snapshot import save_discriminator, save_snapshot

ARCH = dict(resolution=8, z_dim=4, w_dim=4, channel_base=64, channel_max=8, mapping_layers=1)


def diff(*paths, limit: int = 1000):
    return CliRunner().invoke(main, ["checkpoint", "diff", *map(str, paths), "--limit", str(limit)])


def snapshots_of(run):
    return sorted((run / "snapshots").iterdir())  # network-snapshot-000000.000, -000000.008


def test_two_snapshots_are_compared_by_metadata_and_tensors(tiny_run, tmp_path):
    first, second = snapshots_of(tiny_run[1])
    copy = shutil.copy(second, tmp_path / "copy.safetensors")
    result = diff(second, copy)
    assert result.exit_code == 0 and result.output == f"identical: {second} and {copy}\n", result.output

    result = diff(first, second)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == "meta/kimg: 0.0 -> 0.008"
    assert all(line.startswith("tensors/") and "max abs difference" in line for line in lines[1:-1]), lines
    assert lines[-1] == f"{len(lines) - 1} entries differ between {first} and {second}"


def test_a_snapshot_diff_names_the_changed_tensor_and_architecture(tmp_path):
    torch.manual_seed(0)
    G = Generator(**ARCH)
    save_snapshot(tmp_path / "a.safetensors", G, {"kimg": 4})
    with torch.no_grad():
        G.mapping.fc0.weight[0, 0] += 0.25
    save_snapshot(tmp_path / "b.safetensors", G, {"kimg": 4})
    result = diff(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[:-1] == [
        f"tensors/mapping.fc0.weight: max abs difference 0.25 (1 of {G.mapping.fc0.weight.numel()} values differ)"
    ]
    save_snapshot(tmp_path / "wider.safetensors", Generator(**ARCH | {"channel_max": 16}), {"kimg": 4})
    result = diff(tmp_path / "a.safetensors", tmp_path / "wider.safetensors")
    lines = result.output.splitlines()
    assert result.exit_code == 1 and "generator/channel_max: 8 -> 16" in lines, lines
    shape = list(G.synthesis.b4.conv1.weight.shape)
    wider = [16, 16, *shape[2:]]
    assert f"tensors/synthesis.b4.conv1.weight: torch.float32{shape} -> torch.float32{wider}" in lines


def test_a_snapshot_against_a_checkpoint_is_compared_with_its_g_ema(tiny_run):
    run = tiny_run[1]
    first, second = snapshots_of(run)
    checkpoint = run / "checkpoints" / "ckpt-000000008"
    result = diff(second, run)  # a run: its newest checkpoint
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"comparing the tensors of {second} with G_ema of checkpoint {checkpoint}",
        f"identical: {second} and {checkpoint}",
    ]
    result = diff(checkpoint, first)
    lines = result.output.splitlines()
    assert result.exit_code == 1, result.output
    assert lines[0] == f"comparing the tensors of {first} with G_ema of checkpoint {checkpoint}"
    assert all(line.startswith("G_ema/") for line in lines[1:-1]) and len(lines) > 3, lines
    # The same tensors differ as between the two snapshots, the second being the checkpoint's G_ema.
    between_snapshots = [line for line in diff(first, second).output.splitlines() if line.startswith("tensors/")]
    assert sorted(line.replace("G_ema/", "tensors/", 1) for line in lines[1:-1]) == sorted(between_snapshots)
    assert lines[-1] == f"{len(between_snapshots)} entries differ between {checkpoint} and {first}"


def test_files_that_cannot_be_compared_are_refused_in_one_line(tiny_run, tmp_path):
    snapshot = snapshots_of(tiny_run[1])[1]
    damaged = tmp_path / "damaged.safetensors"
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 1  # one bit of the last tensor
    damaged.write_bytes(bytes(data))
    torch.manual_seed(0)
    save_discriminator(tmp_path / "D.safetensors", Discriminator(resolution=8, channel_base=32, channel_max=8), {})
    (tmp_path / "notes.txt").write_text("hello")
    cases = {
        damaged: f"error: {damaged}: snapshot content does not match its checksum, the file is corrupt; copy it again",
        tmp_path / "D.safetensors": f"error: {snapshot} is a snapshot and {tmp_path / 'D.safetensors'} a "
        "discriminator file: they hold different networks; compare two checkpoints (checkpoint folders or runs), "
        "two snapshots (.safetensors), or one of each",
        tmp_path / "missing": f"error: {tmp_path / 'missing'}: no such file or folder; pass two checkpoints "
        "(checkpoint folders or runs), two snapshots (.safetensors), or one of each",
        tmp_path / "notes.txt": f"error: {tmp_path / 'notes.txt'}: not a readable safetensors file",
    }
    for path, line in cases.items():
        result = diff(snapshot, path)
        assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output, result.output
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(line), result.stderr


def test_limit_prints_that_many_differences_and_counts_them_all_and_is_bounded(tiny_run):
    first, second = snapshots_of(tiny_run[1])
    every = diff(first, second).output.splitlines()[:-1]
    result = diff(first, second, limit=2)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        *every[:2],
        f"{len(every)} entries differ between {first} and {second} (first 2 shown)",
    ]
    for limit in (0, 10**6 + 1):
        result = diff(first, second, limit=limit)
        assert result.exit_code == 2 and result.output == f"error: --limit {limit}: must be from 1 to 1,000,000\n"
