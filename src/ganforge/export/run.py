"""`ganforge export`: build the deployable module, export it into a temporary folder beside --out, check it against
the eager generator, and only then write the card and move the model into place. A failed check, a bad input or a
crash leaves nothing under --out (the temporary folder is removed)."""

import contextlib
import dataclasses
import tempfile
from pathlib import Path

import torch

from ganforge import outputs
from ganforge.durable import WriteError, move_file, shorten, write_problem
from ganforge.errors import UserError
from ganforge.export import check, onnx, pt2, qat, quantize, sensitivity
from ganforge.export.card import card_path, make_card, write_card
from ganforge.export.options import SUFFIXES, ExportOptions
from ganforge.export.wrapper import DeployableGenerator
from ganforge.generate.sizes import describe
from ganforge.interop import load_network
from ganforge.metrics.shapes import image_size
from ganforge.progress import Stage

HINTS = {
    "fp32": "the exported model differs from PyTorch by more than float rounding; please report it with these figures",
    "fp16": "use --precision fp32, or allow more with --max-abs-diff",
    # the last layers write the image's finest detail, where quantization noise shows most
    "int8": "keep the layers that matter most in float (--keep-float auto, or by name, e.g. --keep-float {last}), "
    "calibrate otherwise (--calib, --calib-method), or use --precision fp16",
}


def export_network(options: ExportOptions) -> dict:
    """Everything `ganforge export` does; returns the card written next to the model."""
    problems = options.value_problems()  # options made in Python have not been through ExportOptions.parse
    if problems:
        raise UserError(*problems)
    if options.format == "onnx":
        onnx.require_extra()
    outputs.check_writable_folder(options.out.parent, "--out")
    G, meta = load_network(options.network)
    module = DeployableGenerator(G, options.trunc, options.noise, options.uint8, options.batch)
    layers = _layers_to_quantize(module, options) if options.precision == "int8" else []
    _check_memory(module, options)
    # What is exported: the generator, or its copy fine-tuned for int8; the check compares either with the generator.
    exported, ranges, qat_record = module, None, None
    if options.qat_kimg:
        exported, ranges, qat_record = qat.quantization_aware(
            module, layers, options.qat_images(), options.int8_settings(), options.seed + 3
        )
    limits = {"max_abs_diff": options.max_abs_diff_limit(), "max_fid_delta": options.max_fid_delta}
    with tempfile.TemporaryDirectory(prefix=f".{options.out.name}.", dir=options.out.parent) as tmp:
        candidate = Path(tmp) / f"model{SUFFIXES[options.format]}"
        with _writing_beside(options.out):  # the exporters write the candidate (and int8 its float model) there
            traced = _trace(exported, options, candidate)
        fid_images = options.fid_images(_device_type())
        checker = check.Check(module, options.check, fid_images, options.seed, options.inception)
        # --keep-float auto ranks the layers by what the check judges: Inception features when it measures FID
        features = checker.image_features if fid_images else None
        float_layers = sensitivity.FloatLayers(exported, options, traced, layers, Path(tmp), features)
        for kept in float_layers:
            chosen = [layer for layer in layers if layer not in kept]
            with float_layers.attempt():
                with _writing_beside(options.out):
                    runner, quantization = _finish(exported, options, traced, candidate, chosen, ranges)
                figures = checker.run(runner)
            failed = check.problems(figures, limits["max_abs_diff"], limits["max_fid_delta"])
            if not failed or not float_layers.record(figures):
                break
        if failed:
            raise UserError(
                f"--out {options.out}: not written, the export fails its check:",
                *failed,
                summary(dataclasses.asdict(figures)),
                "hint: " + (float_layers.hint() or HINTS[options.precision].format(last=chosen[-1] if chosen else "")),
            )
        if quantization is not None:
            quantization |= float_layers.card() | {"qat": qat_record}
        opset = onnx.opset_of(candidate) if options.format == "onnx" else None
        card = make_card(options, module, candidate, figures, limits, meta, opset, chosen, quantization)
        write_card(card_path(options.out), card)  # the model's arrival is the commit: it comes last
        try:
            move_file(candidate, options.out)
        except WriteError:
            card_path(options.out).unlink(missing_ok=True)  # no card for a model that is not there
            raise
    return card


def _check_memory(module: DeployableGenerator, options: ExportOptions) -> None:
    """Refuse a fixed --batch whose check does not fit: the eager generator and the exported model each run batches
    of that size (a dynamic-batch model is checked CHECK_BATCH images at a time); and a fine-tuning that does not."""
    from ganforge import memory
    from ganforge.generate import budget

    batch = check.CHECK_BATCH if options.batch is None else options.batch
    G, device = module.G, torch.device(_device_type())
    per_image = budget.synthesis_peak_bytes(G, lambda ws: G.synthesis(ws, noise_mode="const"))
    need = memory.Need(
        f"--batch {batch}: the check runs {batch} images of {describe(image_size(G))} at once, in PyTorch and "
        "in the exported model,",
        2 * batch * per_image,
        device.type == "cuda",
        "use a smaller --batch, or dynamic",
    )
    memory.check([need], memory.available_host_bytes(), memory.available_device_bytes(device))
    if options.qat_kimg:  # before the check, on the CPU: its own peak
        qat_need = memory.Need(
            f"--qat-kimg: the fine-tuning runs {qat.QAT_BATCH} images of {describe(image_size(G))} at once with their "
            "gradients,",
            qat.QAT_BATCH * qat.TRAINING_PEAK_PER_IMAGE * per_image,
            False,
            "leave --qat-kimg out, or export on a machine with more memory",
        )
        memory.check([qat_need], memory.available_host_bytes(), None)


def _device_type() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _layers_to_quantize(module: DeployableGenerator, options: ExportOptions) -> list[str]:
    """The quantizable layers less those under a --keep-float prefix; UserError for a prefix that matches none."""
    layers = quantize.quantizable_layers(module)
    unknown = list(dict.fromkeys(p for p in options.keep_float if not any(_under(layer, p) for layer in layers)))
    if unknown:
        shown = ", ".join(shorten(p, 40) for p in unknown[:5]) + (
            f" and {len(unknown) - 5} more" if unknown[5:] else ""
        )
        raise UserError(f"--keep-float {shown}: no quantizable layer there; choose from {', '.join(layers)}")
    kept = [layer for layer in layers if not any(_under(layer, p) for p in options.keep_float)]
    if not kept:
        raise UserError("--keep-float: keeps every layer in float, so nothing is int8; use --precision fp32")
    return kept


def _under(layer: str, prefix: str) -> bool:
    return layer == prefix or layer.startswith(prefix + ".")


@contextlib.contextmanager
def _writing_beside(out: Path):
    """An OSError inside is a problem writing beside --out (the temporary folder is there): a WriteError naming it."""
    try:
        yield
    except OSError as error:
        raise WriteError(f"--out {write_problem(out, error)}") from None


def _trace(module: DeployableGenerator, options: ExportOptions, candidate: Path) -> Path:
    """Trace the float model, shown as a stage, into the candidate itself for fp32 (and pt2), else into a float ONNX
    model beside it for the conversion; returns its path."""
    example = module.example_inputs(options.batch or 2, torch.Generator().manual_seed(options.seed))
    if options.format == "pt2":
        with Stage("export: torch.export trace"):
            pt2.export_pt2(module, candidate, example)
        return candidate
    traced = candidate if options.precision == "fp32" else candidate.with_name("float.onnx")
    with Stage("export: torch.export trace and ONNX translation"):
        onnx.export_onnx(module, traced, example)
    return traced


def _finish(
    module: DeployableGenerator,
    options: ExportOptions,
    traced: Path,
    candidate: Path,
    layers: list[str],
    ranges: dict | None,
):
    """Write the candidate from the traced float model (fp16: converted; int8: `layers` quantized, with the
    activation `ranges` learned by QAT if any) and load it as a user would. Returns (a runner for it, what the int8
    quantization recorded or None)."""
    if options.format == "pt2":
        with Stage("export: loading the .pt2 program as a user would"):
            return pt2.Pt2Runner(candidate), None
    quantization = None
    if options.precision == "fp16":
        with Stage("export: fp16 conversion"):
            onnx.convert_fp16(traced, candidate, onnx.scoped_nodes(traced, "G.mapping"))
    elif options.precision == "int8":
        settings = options.int8_settings() | {"ranges": ranges}
        quantization = quantize.quantize_int8(traced, candidate, module, layers, **settings)
    with Stage("export: loading the ONNX model in onnxruntime"):
        return onnx.OnnxRunner(candidate, [spec.name for spec in module.inputs()]), quantization


def summary(figures: dict) -> str:
    """One line of the check's figures (a Figures as a dict, as in the card)."""
    line = (
        f"checked {figures['images']} images: max abs diff {figures['max_abs_diff']:.3g}, mean abs diff "
        f"{figures['mean_abs_diff']:.3g}, PSNR {figures['psnr_db']:.1f} dB"
    )
    if figures["fid_delta"] is not None:
        line += f"; FID delta {figures['fid_delta']:.3g}, KID {figures['kid']:.3g} over {figures['fid_images']} images"
    return line + f" ({figures['runtime']})"


def closing_note(card: dict, out: Path) -> str:
    what = f"{card['format']} {card['precision']}, {card['file_bytes'] / 1e6:.1f} MB"
    return f"wrote {out} ({what}) and {card_path(out).name}; {summary(card['check'])}"
