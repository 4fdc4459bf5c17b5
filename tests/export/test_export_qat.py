"""Quantization-aware fine-tuning (`export --qat-kimg`): the simulated rounding is the exported graph's, the
fine-tuning without it is plain fine-tuning, it brings the int8 model closer to the float generator, and the CLI
shows and records it."""

import copy
import json

import pytest
import torch
from export_helpers import export, tiny_snapshot

from distinct_helpers import adam_gradients, assert_distinct, perturb
from ganforge.export import onnx, qat, quantize
from ganforge.export.wrapper import DeployableGenerator
from ganforge.snapshot import load_snapshot

pytest.importorskip("onnxruntime", reason="the export extra is not installed: pip install '.[export]'")

CALIBRATION = {"calib": 40, "seed": 1}  # two full batches of 16 and a partial one


def _module(folder, stylegan3=False) -> DeployableGenerator:
    return DeployableGenerator(load_snapshot(tiny_snapshot(folder / "G.safetensors", stylegan3=stylegan3, seed=4))[0])


def _calibration(module):
    return quantize.calibration_inputs(module, CALIBRATION["calib"], CALIBRATION["seed"])


def _int8(module, layers, per_channel, ranges, path):
    """The int8 ONNX model of `module` as the export makes it, with `ranges` learned by QAT (or None)."""
    traced = path.with_suffix(".float.onnx")
    onnx.export_onnx(module, traced, module.example_inputs(2, torch.Generator().manual_seed(0)))
    quantize.quantize_int8(traced, path, module, layers, **CALIBRATION, per_channel=per_channel, ranges=ranges,
                           show=False)  # fmt: skip
    return onnx.OnnxRunner(path, [spec.name for spec in module.inputs()])


@pytest.mark.parametrize("stylegan3, per_channel", [(False, True), (True, False)])
def test_the_simulated_rounding_is_the_exported_graphs_and_qat_brings_it_closer_to_the_float_generator(
    tmp_path, stylegan3, per_channel
):
    """Before the fine-tuning (the quantizer's own ranges) and after it (learned ranges handed to the quantizer), the
    simulated int8 forward and onnxruntime's int8 graph make the same images: their difference is a small fraction
    of the difference int8 makes (rare ties rounded apart by the int8 kernels). And the int8 model of the fine-tuned
    generator is nearer the float generator's images, on inputs the fine-tuning never drew. (A StyleGAN3 generator
    traces slowly: only its fine-tuned model is exported.)"""
    module = _module(tmp_path, stylegan3)
    layers = quantize.quantizable_layers(module)
    inputs = module.example_inputs(32, torch.Generator().manual_seed(11))
    with torch.no_grad():
        float_images = module(*inputs)
    student = module.around(copy.deepcopy(module.G))
    simulation = qat.Simulation(student.G, layers, per_channel)
    simulation.calibrate(student, _calibration(student))

    def int8_error(ranges, name):
        """The int8 model's mean squared difference from the float images; it and the simulation agree."""
        exported = _int8(student, layers, per_channel, ranges, tmp_path / name)(*inputs)
        with torch.no_grad(), simulation.applied():
            simulated = student(*inputs)
        rounding = (exported - float_images).abs().mean()
        assert rounding > 1e-4  # int8 does change the images
        assert (simulated - exported).abs().mean() < 0.05 * rounding
        return (exported - float_images).square().mean()

    before = None if stylegan3 else int8_error(None, "ptq.onnx")
    record = qat.fine_tune(student, module, simulation, 480, seed=3, show=False)
    assert record["mse_after"] < 0.9 * record["mse_before"]
    after = int8_error(simulation.ranges(), "qat.onnx")
    if before is not None:
        assert after < 0.95 * before


def test_fine_tuning_with_the_rounding_off_is_plain_fine_tuning_and_with_it_on_is_not(tmp_path):
    """A student that differs from the teacher (so the gradients are not zero) fine-tuned three ways: without a
    simulation, with one whose rounding is off, and with it on; the first two are bitwise the same."""
    module = _module(tmp_path)
    layers = quantize.quantizable_layers(module)

    def tuned(mode):
        student = module.around(load_snapshot(tmp_path / "G.safetensors")[0], uint8=False)
        with torch.no_grad():
            for p in student.G.synthesis.parameters():
                p.mul_(1.05)
        simulation = None
        if mode is not None:
            simulation = qat.Simulation(student.G, layers, per_channel=True)
            simulation.calibrate(student, _calibration(student))
            simulation.set_mode(mode)
        record = qat.fine_tune(student, module.around(module.G, uint8=False), simulation, 48, seed=5, show=False)
        return torch.cat([p.flatten() for p in student.G.parameters()]), record

    plain, plain_record = tuned(None)
    off, off_record = tuned("off")
    rounding, _ = tuned("round")
    assert plain_record["mse_after"] < plain_record["mse_before"]  # it did fine-tune
    assert torch.equal(off, plain) and off_record["mse_after"] == plain_record["mse_after"]
    assert not torch.equal(rounding, plain)


def test_the_fine_tuning_loss_is_each_images_squared_difference_from_the_teachers_image_of_its_input(
    tmp_path, monkeypatch
):
    """One step on one batch: the gradient Adam receives is that of the mean squared difference between the student's
    and the teacher's image of the same input. The student is moved off the teacher and the images are checked to
    differ from each other and from the teacher's, so the teacher's image of another input, or the student's own,
    cannot pass for it."""
    module = _module(tmp_path)
    teacher = module.around(module.G, uint8=False)
    student = module.around(perturb(copy.deepcopy(module.G), scale=0.05, keep=("noise_strength",)), uint8=False)
    before = copy.deepcopy(student)
    received = adam_gradients(monkeypatch)
    qat.fine_tune(student, teacher, None, qat.QAT_BATCH, seed=5, show=False)
    generator = torch.Generator().manual_seed(5)
    student.example_inputs(qat.QAT_EVAL_LATENTS, generator)  # the held-out inputs come first
    inputs = student.example_inputs(qat.QAT_BATCH, generator)
    with torch.no_grad():
        want = teacher(*inputs)
    got = before(*inputs)
    assert_distinct(torch.cat([want, got.detach()]), "the teacher's and the student's images")
    expected = torch.autograd.grad((got - want).square().mean(), list(before.G.parameters()), allow_unused=True)
    (grads,) = received
    for value, wanted in zip(grads, expected, strict=True):
        torch.testing.assert_close(value, torch.zeros_like(value) if wanted is None else wanted, rtol=1e-4, atol=1e-9)


def test_export_with_qat_shows_its_stages_and_records_the_fine_tuning_on_the_card(tmp_path):
    """At 8 px (blocks b4 and b8): a 16 px generator's third block would add only a second of tracing."""
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", seed=4, resolution=8)
    out = tmp_path / "G.onnx"
    args = ["--precision", "int8", "--calib", "8", "--check", "4", "--check-fid", "0", "--qat-kimg", "0.04"]
    result = export("--network", snapshot, "--out", out, *args, "--keep-float", "synthesis.b8")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for stage in ("export: QAT calibration on 8 latents", "export: QAT fine-tuning on 40 images"):
        assert f"{stage}: started" in lines and any(line.startswith(f"{stage}: done in ") for line in lines), stage
    assert lines.index("export: QAT fine-tuning on 40 images: started") < lines.index(
        "export: torch.export trace and ONNX translation: started"
    )
    card = json.loads((tmp_path / "G.onnx.json").read_text())
    assert card["format_version"] == 4
    settings = card["quantization"]
    assert settings["activation_ranges"] == "learned by the fine-tuning (qat)"
    assert settings["float_layers"] == ["synthesis.b8.conv0", "synthesis.b8.conv1"]
    record = settings["qat"]
    assert record["images"] == 40 and record["batch"] == qat.QAT_BATCH and record["seed"] == 3
    assert record["optimizer"]["lr"] == qat.QAT_LEARNING_RATES and record["mse_after"] < record["mse_before"]
    # The check compares the written model with the generator given, not with its fine-tuned copy.
    original = DeployableGenerator(load_snapshot(snapshot)[0])
    generator, largest = torch.Generator().manual_seed(0), 0.0
    written = onnx.OnnxRunner(out, [spec.name for spec in original.inputs()])
    for size in card["check"]["batch_sizes"]:
        inputs = original.example_inputs(size, generator)
        with torch.no_grad():
            largest = max(largest, (written(*inputs) - original(*inputs)).abs().max().item())
    assert card["check"]["max_abs_diff"] == pytest.approx(largest, rel=1e-6)
