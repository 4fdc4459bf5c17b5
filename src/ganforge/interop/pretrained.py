"""A pretrained model as a training run starts from it (`ganforge train --resume FILE[,FILE]`): every network the
file holds (G, G_ema, D), converted by the readers `ganforge import` uses, so nothing in it is executed, and the
augmentation strength ADA had reached when it was saved; each file read once.

- an NVlabs pickle holds G, D, G_ema and its `augment_pipe`, whose buffer `p` is ADA's probability;
- a rosinality checkpoint holds `g`, `d`, `g_ema` (a converted one only `g_ema`) and, from its own ADA, `ada_aug_p`;
- a TensorFlow-era NVlabs pickle holds G, D and Gs (G_ema), and no augmentation state;
- a released R3GAN snapshot holds G, D and G_ema, and no augmentation state (its augmentation is on a schedule);
- a ganforge snapshot holds G_ema, a ganforge discriminator file D: give both, comma-separated, for the pair;
- a ganforge checkpoint folder (or a run folder: its newest checkpoint) holds G, G_ema, D and ADA's p, read with
  every check a resume makes; its hash is its tensors file's, from its verified manifest.

`describe` tells what the resolver needs to know without the weights (architectures, what is held, p, hashes), small
enough to broadcast from the rank that read the file to the others.
"""

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import checkpoint
from ganforge.config.architecture import Architecture
from ganforge.errors import UserError
from ganforge.interop.network import NVLABS, ROSINALITY, SNAPSHOT, convert, file_kind, holds, parse, sha256_of
from ganforge.interop.official_pickle import PersistentRecord
from ganforge.nets.configured import build_networks_from, network_arguments
from ganforge.nets.growth import describe_stage, scheduled_stage, stage_of
from ganforge.snapshot import DISCRIMINATOR_FORMAT, file_format, load_discriminator, load_snapshot

NETWORK_NAMES = ("G", "G_ema", "D")
CHECKPOINT = "ganforge checkpoint"


@dataclass(frozen=True)
class Pretrained:
    """The networks of one or two pretrained files (by NETWORK_NAMES, those held), ADA's p if a file recorded it,
    and what each file is."""

    networks: dict[str, torch.nn.Module]
    augment_p: float | None
    formats: tuple[str, ...]  # per file: SNAPSHOT ("ganforge snapshot"), NVLABS, ROSINALITY, or "ganforge D file"
    sha256: tuple[str, ...]  # per file


@dataclass(frozen=True)
class PretrainedFacts:
    """What a run takes from pretrained files, without their weights: G's constructor arguments and generator
    ("stylegan2", "stylegan3-t", "stylegan3-r" or "r3gan"), D's constructor arguments (None: the files hold no D), which
    networks they hold, ADA's p, and each file's format and SHA-256."""

    generator: str
    g_arch: dict
    d_arch: dict | None
    held: tuple[str, ...]
    augment_p: float | None
    formats: tuple[str, ...]
    sha256: tuple[str, ...]


def read_pretrained(paths: list[Path]) -> Pretrained:
    """Every network and ADA's p of `paths` (one file, or a snapshot and a discriminator file); a UserError naming
    the file when one is unusable, or when the files hold no generator or two of one network."""
    networks, formats, hashes, p = {}, [], [], None
    for path in paths:
        held, found_p, kind, digest = _read_one(Path(path))
        if set(held) & set(networks):
            raise UserError(
                f"--resume {','.join(map(str, paths))}: two files hold {', '.join(set(held) & set(networks))}"
            )
        networks |= held
        p = found_p if found_p is not None else p
        formats.append(kind)
        hashes.append(digest)
    if not {"G", "G_ema"} & set(networks):
        raise UserError(f"--resume {','.join(map(str, paths))}: holds no generator (G or G_ema); give a snapshot too")
    networks = {name: _grown(network, ",".join(map(str, paths))) for name, network in networks.items()}
    return Pretrained(networks, p, tuple(formats), tuple(hashes))


def _grown(network: torch.nn.Module, shown_paths: str) -> torch.nn.Module:
    """A network that grew progressively (--grow) as training starts from it: once fully grown, the same network
    without the image layers only growth used (the lower resolutions' toRGB and fromRGB); refused while growing."""
    stage = stage_of(network)
    if stage:
        raise UserError(
            f"--resume {shown_paths}: saved while growing (at {describe_stage(stage)}), so its higher resolutions are "
            "untrained; to finish growing, rerun the command that trained it (it resumes); to fine-tune, start from a "
            "snapshot taken after growth"
        )
    config = getattr(network, "config", {})
    if not config.get("progressive"):
        return network
    grown = type(network)(**{key: value for key, value in config.items() if key != "progressive"})
    weights = network.state_dict()
    grown.load_state_dict({key: weights[key] for key in grown.state_dict()})
    return grown.train(network.training)


def describe(pretrained: Pretrained) -> PretrainedFacts:
    """What `pretrained` holds, without the weights; the architecture is G_ema's (else G's)."""
    nets = pretrained.networks
    G, D = nets.get("G_ema", nets.get("G")), nets.get("D")
    held = tuple(name for name in NETWORK_NAMES if name in nets)
    d_arch = None if D is None else D.config
    return PretrainedFacts(
        G.generator, G.config, d_arch, held, pretrained.augment_p, pretrained.formats, pretrained.sha256
    )


def _read_one(path: Path) -> tuple[dict[str, torch.nn.Module], float | None, str, str]:
    """(networks by name, ADA's p or None, the file's format, its SHA-256) of one file or checkpoint folder."""
    if path.is_dir():
        trained = from_checkpoint(checkpoint.load_trained(path))
        return trained.networks, trained.augment_p, trained.formats[0], trained.sha256[0]
    kind, digest = file_kind(path), sha256_of(path)
    if kind == SNAPSHOT:
        if file_format(path) == DISCRIMINATOR_FORMAT:
            return {"D": load_discriminator(path)[0]}, None, "ganforge discriminator file", digest
        return {"G_ema": load_snapshot(path)[0]}, None, kind, digest
    parsed = parse(path, kind)
    held = {name: convert(path, kind, parsed, name)[0] for name in NETWORK_NAMES if holds(kind, parsed, name)}
    if not held:  # the reader's own message, which says what the file holds
        convert(path, kind, parsed, "G_ema")
    if kind == NVLABS:
        return held, _nvlabs_p(path, parsed.get("augment_pipe")), kind, digest
    if kind == ROSINALITY:
        return held, _probability(path, "ada_aug_p", parsed.get("ada_aug_p")), kind, digest
    return held, None, kind, digest  # a TensorFlow-era or R3GAN pickle keeps no augmentation state


def from_checkpoint(trained: checkpoint.Trained) -> Pretrained:
    """G, G_ema and D of a ganforge checkpoint, built as the run that wrote it built them, and ADA's p when that run
    adapted it; its format names the checkpoint. The checkpoint passed a resume's checks, so its networks are within
    the limits and its tensors fit them."""
    fields = trained.fields
    G, D = build_networks_from(*network_arguments(Architecture.from_fields(fields)))
    networks = {"G": G, "G_ema": copy.deepcopy(G), "D": D}
    for name, network in networks.items():
        network.load_state_dict(trained.state[name])
        if fields["model.grow"] is True:  # the stage of its last step, which follows from its progress
            nimg = max(trained.state["loop"]["cur_nimg"] - fields["schedule.batch"], 0)
            grow = fields["schedule.grow_from"], fields["schedule.grow_kimg"], fields["data.resolution"]
            network.set_stage(list(scheduled_stage(*grow, nimg)))
    augment = trained.state["augment"]
    p = float(augment["pipe"]["p"].reshape(()).double()) if augment else None
    return Pretrained(networks, p, (f"{CHECKPOINT} {trained.path.name}",), (trained.tensors_sha256,))


def _nvlabs_p(path: Path, augment_pipe) -> float | None:
    """ADA's p from the pickle's AugmentPipe (its buffer `p`), None when the pickle has none."""
    if not isinstance(augment_pipe, PersistentRecord):
        return None
    buffers = augment_pipe.state.get("_buffers")
    p = buffers.get("p") if isinstance(buffers, dict) else None
    if not isinstance(p, torch.Tensor) or p.numel() != 1 or p.dtype.is_complex:
        raise UserError(f"{path}: its augment_pipe holds no scalar p; not an ADA augmentation pipe NVlabs wrote")
    return _probability(path, "augment_pipe.p", float(p.reshape(()).double()))


def _probability(path: Path, name: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.dtype.is_complex:
        value = float(value.reshape(()).double())
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not (math.isfinite(value) and 0 <= value <= 1):
        raise UserError(f"{path}: its {name} is not a probability in [0, 1]; the file is damaged")
    return float(value)
