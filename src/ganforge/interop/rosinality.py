"""rosinality/stylegan2-pytorch checkpoints (a `.pt` with `g_ema`, `g`, `d` state dicts) -> ganforge networks.

The file is read with `torch.load(weights_only=True)`: tensors, containers and plain values only (plus the training
script's `argparse.Namespace`, an attribute bag). That repository's `convert_weight.py` fills its modules from the
official TensorFlow weights, which fixes the correspondence to the official names used by ganforge:

    style.{i+1}.weight, .bias                 mapping.fc{i}.weight, .bias (both store weights / lr multiplier 0.01)
    input.input [1, C, 4, 4]                  synthesis.b4.const [C, 4, 4]
    conv1, convs.{2k}, convs.{2k+1}           synthesis.b4.conv1, synthesis.b{8*2^k}.conv0, .conv1, each with
      .conv.weight [1, O, I, 3, 3]              .weight [O, I, 3, 3] (equal-lr scale, then demodulation, as official)
      .conv.modulation.weight, .bias            .affine.weight, .bias
      .noise.weight [1]                         .noise_strength []
      .activate.bias                            .bias (FusedLeakyReLU is lrelu(x + b) * sqrt(2), as bias_act)
    to_rgb1, to_rgbs.{k}                      synthesis.b4.torgb, synthesis.b{8*2^k}.torgb:
      .conv.weight [1, 3, I, 1, 1], .bias [1, 3, 1, 1]   .weight [3, I, 1, 1], .bias [3]
    noises.noise_{j} [1, 1, r, r]             noise_const [r, r] of conv j (b4.conv1, then conv0, conv1 per block)
    latent_avg (converted checkpoints only)   mapping.w_avg; otherwise w_avg is estimated (W_AVG_SAMPLES)
    convs.0.0.weight, convs.0.1.bias          D b{R}.fromrgb.weight, .bias
    convs.{i}.conv1.0.weight, .conv1.1.bias   D b{r}.conv0.weight, .bias with r = R / 2^(i-1)
    convs.{i}.conv2.1.weight, .conv2.2.bias   D b{r}.conv1.weight, .bias (conv2.0 is the blur)
    convs.{i}.skip.1.weight                   D b{r}.skip.weight
    final_conv.0.weight, final_conv.1.bias    D b4.conv.weight, .bias
    final_linear.0, final_linear.1            D b4.fc, b4.out

The blur and upsampling kernels (`*.kernel`) are checked to be the [1, 3, 3, 1] filter and dropped. rosinality has no
class conditioning and always 3 channels; size, style_dim, n_mlp and the channels come from the tensor shapes, and
every tensor is checked against the ganforge network built from them.
"""

import argparse
import contextlib
import io
import os
import pickle
import re
import struct
import zipfile
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop.restricted_pickle import DECODE_ERRORS
from ganforge.interop.tensors import build_network, check_fir, construct, fit_singleton_dims
from ganforge.limits import shown, shown_name
from ganforge.nets import Discriminator, Generator

SOURCE_KEYS = {"G_ema": "g_ema", "G": "g", "D": "d"}
W_AVG_SAMPLES = 4096  # as rosinality's generate.py estimates its truncation mean
W_AVG_SEED = 0
MAX_MESSAGE_DETAIL = 200  # characters of a decoding error quoted in a message
MAX_ZIP_MEMBERS = 100_000  # torch.save writes one member per storage, and a few more
MAX_NAME_CHARS = 128  # a state-dict name ("convs.12.conv.modulation.weight")
PROBE_BYTES = 1 << 16  # a read this short may ask for more than remains (torch probes for a tar header)
MAX_BLOCKS = 16  # resolution is 2^(blocks + 2): more blocks than any size ganforge allows, kept a small integer
MODULATED = {"conv.weight": "weight", "conv.modulation.weight": "affine.weight", "conv.modulation.bias": "affine.bias"}
STYLED_CONV = {**MODULATED, "noise.weight": "noise_strength", "activate.bias": "bias"}
TO_RGB = {**MODULATED, "bias": "bias"}
D_LAYERS = {
    "conv1.0.weight": "conv0.weight",
    "conv1.1.bias": "conv0.bias",
    "conv2.1.weight": "conv1.weight",
    "conv2.2.bias": "conv1.bias",
    "skip.1.weight": "skip.weight",
}
D_HEAD = {
    "convs.0.0.weight": "b{R}.fromrgb.weight",
    "convs.0.1.bias": "b{R}.fromrgb.bias",
    "final_conv.0.weight": "b4.conv.weight",
    "final_conv.1.bias": "b4.conv.bias",
    "final_linear.0.weight": "b4.fc.weight",
    "final_linear.0.bias": "b4.fc.bias",
    "final_linear.1.weight": "b4.out.weight",
    "final_linear.1.bias": "b4.out.bias",
}


def read_checkpoint(path: Path) -> dict:
    """The checkpoint dict, loaded with torch's tensors-only unpickler; UserError when refused or not rosinality's.
    A zip checkpoint (torch.save's format) is first checked member by member: stored as torch writes them, within
    the file, and matching its CRC (torch checks none of these), so that a damaged or inflated archive is named
    before torch reads it."""
    zipped = _is_zip(path)
    if zipped:
        _check_zip(path)
    try:
        with torch.serialization.safe_globals([argparse.Namespace]), _open(path, zipped) as file:
            checkpoint = torch.load(file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL ([\w.]{1,100})", str(err)[:4000])
        what = f"asks for {found.group(1)}" if found else "holds objects other than tensors and plain data"
        raise UserError(
            f"{path}: refused: the checkpoint {what}; ganforge never runs code from a file, and nothing "
            "from this one was run"
        ) from None
    except (*DECODE_ERRORS, OSError, AssertionError) as err:  # torch's legacy reader asserts what the stream holds
        raise UserError(f"{path}: not a readable PyTorch checkpoint ({_detail(err)})") from None
    except RecursionError:
        raise UserError(f"{path}: not a readable PyTorch checkpoint (nested too deeply)") from None
    if not isinstance(checkpoint, dict) or not any(isinstance(checkpoint.get(k), dict) for k in SOURCE_KEYS.values()):
        keys = ", ".join(map(shown_name, list(checkpoint)[:8])) if isinstance(checkpoint, dict) else shown(checkpoint)
        raise UserError(
            f"{path}: a PyTorch checkpoint, but not a rosinality stylegan2-pytorch one (no g_ema, g or d; "
            f"it holds {keys})"
        )
    return checkpoint


def _detail(err: BaseException) -> str:
    """The start of a decoding error's message, with its kind where the message alone says little (a KeyError's is
    the missing key)."""
    text = str(err)[:MAX_MESSAGE_DETAIL]
    return f"{type(err).__name__}: {text}" if type(err) in (KeyError, EOFError) or not text else text


class _Truncated(EOFError):
    """The stream declares more bytes than remain in the file."""


class _BoundedReader(io.BufferedReader):
    """A checkpoint in torch.save's format before PyTorch 1.6, refusing a read longer than what remains of the file:
    torch's reader of that format asks for each length the stream declares (a string, a storage's dimensions), and
    a read allocates what it asks for before it finds the file shorter."""

    def __init__(self, raw):
        super().__init__(raw)
        self.size = os.fstat(raw.fileno()).st_size

    def read(self, size=-1, /):
        if size is not None and size > max(self.size - self.tell(), PROBE_BYTES):
            raise _Truncated(f"the checkpoint declares {size} bytes where {self.size - self.tell()} remain")
        return super().read(size)


def _open(path: Path, zipped: bool):
    """What torch.load reads: the path of a zip (read member by member, its sizes checked), a bounded file else."""
    return contextlib.nullcontext(path) if zipped else _BoundedReader(open(path, "rb", buffering=0))  # noqa: SIM115


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(4) == b"PK\x03\x04"


def _check_zip(path: Path) -> None:
    """UserError unless every member of the zip at `path` is stored uncompressed (as torch.save writes them), lies
    within the file, and matches its CRC-32."""
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise UserError(f"{path}: a zip of {len(members)} members, more than a checkpoint holds")
            for info in members:
                name = shown_name(info.filename)
                if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                    raise UserError(
                        f"{path}: member {name} is compressed; torch.save stores its members uncompressed, "
                        "so this is not a checkpoint it wrote"
                    )
                if info.header_offset + info.compress_size > size:
                    raise UserError(
                        f"{path}: member {name} reaches beyond the end of the file; it is truncated, copy it again"
                    )
                with archive.open(info) as member:  # reading to the end checks the CRC
                    while member.read(1 << 20):
                        pass
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
        RuntimeError,
        ValueError,
        EOFError,
        OverflowError,
        struct.error,
        OSError,
    ) as err:
        raise UserError(
            f"{path}: not a readable PyTorch checkpoint, a damaged zip archive ({_detail(err)}); copy it again"
        ) from None


def state_dict(path: Path, checkpoint: dict, which: str) -> dict:
    """The state dict of network `which` (G_ema, G or D): names and floating-point tensors, each checked."""
    tensors = checkpoint.get(SOURCE_KEYS[which])
    if not isinstance(tensors, dict):
        present = ", ".join(k for k, v in SOURCE_KEYS.items() if isinstance(checkpoint.get(v), dict))
        raise UserError(f"{path}: no {which} ({SOURCE_KEYS[which]}) in this checkpoint; it holds {present} (--which)")
    for name, value in tensors.items():
        if not (isinstance(name, str) and len(name) <= MAX_NAME_CHARS):
            raise UserError(f"{path}: {SOURCE_KEYS[which]} has an entry named {shown_name(name)}; not a state dict")
        if not (isinstance(value, torch.Tensor) and value.layout == torch.strided and value.is_floating_point()):
            raise UserError(
                f"{path}: {SOURCE_KEYS[which]}.{name} is {shown(value)}, not a tensor of floating-point numbers"
            )
        if value.numel() * value.element_size() > value.untyped_storage().nbytes():
            raise UserError(
                f"{path}: {SOURCE_KEYS[which]}.{name} has {value.numel()} elements over a storage of "
                f"{value.untyped_storage().nbytes()} bytes (elements repeated); not a state dict "
                "torch.save wrote of a network"
            )
    return tensors


def _generator_name(key: str) -> str | None:
    """The official name of a rosinality generator tensor; "" for a kernel to drop; None when unknown."""
    if match := re.fullmatch(r"style\.(\d+)\.(weight|bias)", key):
        return f"mapping.fc{int(match[1]) - 1}.{match[2]}"
    if key == "input.input":
        return "synthesis.b4.const"
    if match := re.fullmatch(r"noises\.noise_(\d+)", key):
        return f"synthesis.{_noise_layer(int(match[1]))}.noise_const"
    if match := re.fullmatch(r"(conv1|convs\.(\d+))\.(.+)", key):
        layer = "b4.conv1" if match[2] is None else f"b{2 ** (int(match[2]) // 2 + 3)}.conv{int(match[2]) % 2}"
        return "" if match[3] == "conv.blur.kernel" else _suffix(f"synthesis.{layer}", STYLED_CONV, match[3])
    if match := re.fullmatch(r"(to_rgb1|to_rgbs\.(\d+))\.(.+)", key):
        block = "b4" if match[2] is None else f"b{2 ** (int(match[2]) + 3)}"
        return "" if match[3] == "upsample.kernel" else _suffix(f"synthesis.{block}.torgb", TO_RGB, match[3])
    return None


def _noise_layer(j: int) -> str:
    """The layer of noise input j: b4.conv1, then conv0 and conv1 of b8, b16, ..."""
    return "b4.conv1" if j == 0 else f"b{2 ** ((j + 1) // 2 + 2)}.conv{1 - j % 2}"


def _suffix(prefix: str, table: dict, rest: str) -> str | None:
    return f"{prefix}.{table[rest]}" if rest in table else None


def _discriminator_name(key: str, resolution: int) -> str | None:
    """The official name of a rosinality discriminator tensor (ResBlock i >= 1 is b{resolution / 2^(i-1)})."""
    if key in D_HEAD:
        return D_HEAD[key].format(R=resolution)
    match = re.fullmatch(r"convs\.(\d+)\.(.+)", key)
    if match is None or int(match[1]) == 0:
        return None
    if match[2] in ("conv2.0.kernel", "skip.0.kernel"):
        return ""
    return _suffix(f"b{resolution >> (int(match[1]) - 1)}", D_LAYERS, match[2])


def _rename(path: Path, tensors: dict, name_of, kernel_gain: float) -> dict:
    """Official-named tensors; every kernel is checked and dropped; unknown names are listed in one UserError."""
    renamed, unknown = {}, []
    for key, value in tensors.items():
        name = name_of(key)
        if name is None:
            unknown.append(f"{path}: tensor {key} is not part of a rosinality StyleGAN2 network")
        elif name == "":
            check_fir(path, key, value, kernel_gain)
        else:
            renamed[name] = value
    if unknown:
        raise UserError(*unknown)
    return renamed


def _shape(path: Path, tensors: dict, key: str, dims: int) -> torch.Size:
    """The shape of tensors[key], which must have `dims` dimensions."""
    if key not in tensors:
        raise UserError(f"{path}: tensor {key} is missing; not a rosinality StyleGAN2 network")
    if tensors[key].ndim != dims:
        raise UserError(
            f"{path}: tensor {key} has {tensors[key].ndim} dimensions, not {dims}; not a rosinality StyleGAN2 network"
        )
    return tensors[key].shape


def _count(tensors: dict, pattern: str) -> int:
    return sum(1 for key in tensors if re.fullmatch(pattern, key))


def read_generator(path: Path, checkpoint: dict, which: str) -> tuple[Generator, dict]:
    """A ganforge Generator equal to a rosinality one, and what was inferred (size, style_dim, n_mlp, w_avg)."""
    tensors = state_dict(path, checkpoint, which)
    size = 2 ** (min(_count(tensors, r"to_rgbs\.\d+\.conv\.weight"), MAX_BLOCKS) + 2)
    style_dim, n_mlp = _shape(path, tensors, "style.1.weight", 2)[1], _count(tensors, r"style\.\d+\.weight")
    top = "to_rgb1" if size == 4 else f"to_rgbs.{size.bit_length() - 4}"
    arch = dict(
        resolution=size,
        img_channels=_shape(path, tensors, "to_rgb1.bias", 4).numel(),
        c_dim=0,
        z_dim=style_dim,
        w_dim=style_dim,
        channel_base=_shape(path, tensors, f"{top}.conv.weight", 5)[2] * size,
        channel_max=_shape(path, tensors, "input.input", 4)[1],
        mapping_layers=n_mlp,
    )
    renamed = _rename(path, tensors, _generator_name, kernel_gain=4.0)  # upsampling kernels carry the gain 4
    latent_avg = checkpoint.get("latent_avg") if which == "G_ema" else None
    estimate = not isinstance(latent_avg, torch.Tensor)
    if not estimate and not (latent_avg.layout == torch.strided and latent_avg.is_floating_point()):
        raise UserError(f"{path}: latent_avg is {shown(latent_avg)}, not a tensor of floating-point numbers")
    # a placeholder w_avg when there is none to load: it is estimated once the mapping network holds its weights
    renamed["mapping.w_avg"] = torch.zeros([style_dim]) if estimate else latent_avg.reshape(-1)
    shapes = {k: v.shape for k, v in construct(path, Generator, arch, "meta").state_dict().items()}
    G = build_network(path, Generator, arch, fit_singleton_dims(renamed, shapes))
    w_avg = _estimate_w_avg(G) if estimate else "latent_avg"
    return G, {"size": size, "style_dim": style_dim, "n_mlp": n_mlp, "w_avg": w_avg}


def _estimate_w_avg(G: Generator) -> str:
    """Set w_avg to the mean w of W_AVG_SAMPLES latents drawn with a fixed seed (the truncation centre)."""
    z = torch.randn([W_AVG_SAMPLES, G.z_dim], generator=torch.Generator().manual_seed(W_AVG_SEED))
    with torch.no_grad():
        G.mapping.w_avg.copy_(G.mapping(z, None)[:, 0].mean(dim=0))
    return f"mean w of {W_AVG_SAMPLES} latents (seed {W_AVG_SEED}); the checkpoint has no latent_avg"


def read_discriminator(path: Path, checkpoint: dict) -> tuple[Discriminator, dict]:
    """A ganforge Discriminator equal to a rosinality one (minibatch-stddev group 4), and its inferred size."""
    tensors = state_dict(path, checkpoint, "D")
    size = 2 ** (min(_count(tensors, r"convs\.\d+\.conv1\.0\.weight"), MAX_BLOCKS) + 2)
    arch = dict(
        resolution=size,
        img_channels=_shape(path, tensors, "convs.0.0.weight", 4)[1],
        c_dim=0,
        channel_base=_shape(path, tensors, "convs.0.0.weight", 4)[0] * size,
        channel_max=_shape(path, tensors, "final_conv.0.weight", 4)[0],
        mbstd_group_size=4,
    )
    renamed = _rename(path, tensors, lambda key: _discriminator_name(key, size), kernel_gain=1.0)
    return build_network(path, Discriminator, arch, renamed), {"size": size}
