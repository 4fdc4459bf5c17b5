"""NVlabs StyleGAN2 networks, read as data by `official_pickle`, -> ganforge Generator / Discriminator.

The constructor kwargs each network recorded (`_init_kwargs`, from `training/networks.py` of stylegan2-ada-pytorch or
`training/networks_stylegan2.py` of stylegan3) become ganforge's architecture. Settings ganforge implements only in
their default form (architecture, filter, activation, ...) must have that value; settings that change neither the
architecture nor the images (memory format, fused-modconv choice, w_avg tracking rate, frozen D layers) are ignored.
Tensors keep their official names (docs/official-tensor-mapping.md) but for the constant resample filters.
"""

from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop.official_pickle import PersistentRecord
from ganforge.interop.tensors import build_network, drop_resample_filters
from ganforge.limits import ARCHITECTURES, channels_at, shown, shown_name
from ganforge.nets import Discriminator, Generator
from ganforge.snapshot import listed

NETWORKS = ("G_ema", "G", "D")
MAX_MODULE_DEPTH = 8  # NVlabs' networks nest 4 deep (G_ema.synthesis.b64.conv0)
MAX_NAME_CHARS = 64  # module, parameter and buffer names ("noise_const", "b1024", "magnitude_ema")
MAX_LIST_SETTING = 16  # a list-valued setting: resample_filter [1, 3, 3, 1]
G_REQUIRED = ("z_dim", "c_dim", "w_dim", "img_resolution", "img_channels")
D_REQUIRED = ("c_dim", "img_resolution", "img_channels")
# A rule for one constructor setting: IGNORE (it changes neither the tensors nor the images), or
# (official default, the values ganforge implements or ANY).
IGNORE = "ignore"
ANY = None
FIR = [1, 3, 3, 1]
LRELU = ("lrelu", ["lrelu"])
SIZES = {"channel_base": (32768, ANY), "channel_max": (512, ANY), "num_fp16_res": (0, ANY), "conv_clamp": (None, ANY)}
SYNTHESIS_RULES = {
    **SIZES,
    "architecture": ("skip", list(ARCHITECTURES)),
    "resample_filter": (FIR, [FIR]),
    "use_noise": (True, [True]),
    "activation": LRELU,
    "kernel_size": (3, [3]),
    "fp16_channels_last": IGNORE,
    "fused_modconv_default": IGNORE,
}
D_BLOCK_RULES = {
    "activation": LRELU,
    "resample_filter": (FIR, [FIR]),
    "fp16_channels_last": IGNORE,
    "freeze_layers": IGNORE,
}
D_EPILOGUE_RULES = {"mbstd_group_size": (4, ANY), "mbstd_num_channels": (1, [1]), "activation": LRELU}


def _mapping_rules(width: int, num_layers: tuple) -> dict:
    """Mapping-network rules; `width` is w_dim (G) or cmap_dim (D's label embedding)."""
    return {
        "num_layers": num_layers,
        "embed_features": (None, [None, width]),
        "layer_features": (None, [None, width]),
        "activation": LRELU,
        "lr_multiplier": (0.01, [0.01]),
        "w_avg_beta": IGNORE,
    }


def network_record(
    path: Path, data, which: str, record: type = PersistentRecord, kind: str = "an NVlabs network pickle"
):
    """The network `which` (G_ema, G or D) of an unpickled file of `kind`, whose networks unpickle as `record`s
    (an NVlabs pickle's PersistentRecord, an R3GAN snapshot's ModuleRecord); UserError naming what the file holds."""
    if not isinstance(data, dict) or not any(isinstance(data.get(k), record) for k in NETWORKS):
        raise UserError(f"{path}: a pickle, but not {kind} (no G, D or G_ema network in it)")
    found = data.get(which)
    if not isinstance(found, record):
        present = ", ".join(k for k in NETWORKS if isinstance(data.get(k), record))
        raise UserError(f"{path}: no {which} network in this pickle; it holds {present} (--which)")
    return found


def module_tensors(path: Path, record: PersistentRecord) -> dict[str, torch.Tensor]:
    """Parameters and persistent buffers of a module tree by dotted name, as its `state_dict()` would list them.
    Each module is visited once: a module reached twice (shared, or a cycle) is refused, since a walk of shared
    children would cost 2^depth, and a network NVlabs wrote is a tree."""
    tensors, seen, pending = {}, set(), [(record, "")]
    while pending:
        rec, prefix = pending.pop()
        if id(rec) in seen:
            raise UserError(
                f"{path}: module {prefix[:-1] or 'the network'} appears twice in the module tree; not a "
                "network NVlabs wrote"
            )
        seen.add(id(rec))
        if prefix.count(".") > MAX_MODULE_DEPTH:
            raise UserError(f"{path}: modules nested more than {MAX_MODULE_DEPTH} deep; not a StyleGAN network")
        for name, value in _members(path, rec, prefix):
            if isinstance(value, PersistentRecord):
                pending.append((value, f"{prefix}{name}."))
            elif isinstance(value, torch.Tensor):
                tensors[prefix + name] = value
            elif value is not None:
                raise UserError(f"{path}: {prefix}{name} is a {type(value).__name__}, not a tensor or a module")
    return tensors


def _members(path: Path, rec: PersistentRecord, prefix: str) -> list:
    """(name, value) of a module record's parameters, persistent buffers and children; names checked."""
    params, buffers, children = (rec.state.get(k) for k in ("_parameters", "_buffers", "_modules"))
    skip = rec.state.get("_non_persistent_buffers_set", set())
    if not all(isinstance(x, dict) for x in (params, buffers, children)) or not isinstance(skip, set):
        raise UserError(f"{path}: {prefix[:-1] or 'the network'} ({shown_name(rec.class_name)}) is not a torch module")
    members = [*params.items(), *((k, v) for k, v in buffers.items() if k not in skip), *children.items()]
    for name, _ in members:
        if not (isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS and "." not in name):
            where = prefix[:-1] or "the network"
            raise UserError(f"{path}: {where} has a member named {shown_name(name)}; not a torch module")
    return members


def child(record: PersistentRecord, name: str):
    """The child module `name` of a module record, or None."""
    modules = record.state.get("_modules")
    return modules.get(name) if isinstance(modules, dict) else None


def _init_kwargs(path: Path, record: PersistentRecord, class_name: str) -> dict:
    if record.class_name != class_name:
        raise UserError(f"{path}: the network is a {shown_name(record.class_name)}, not a StyleGAN2 {class_name}")
    kwargs, args = record.state.get("_init_kwargs"), record.state.get("_init_args", ())
    if not isinstance(kwargs, dict) or not (isinstance(args, (tuple, list)) and len(args) == 0):
        raise UserError(f"{path}: the {class_name} recorded no constructor keyword arguments; not an NVlabs network")
    return dict(kwargs)


def _plain(value) -> bool:
    """A setting's value as NVlabs records them: a number, string, None, or a short list of those (a filter)."""
    scalars = (type(None), bool, int, float, str)
    if isinstance(value, (list, tuple)):
        return len(value) <= MAX_LIST_SETTING and all(type(v) in scalars for v in value)
    return type(value) in scalars


def settings(where: str, given, rules: dict, problems: list) -> dict:
    """`rules` maps a name to IGNORE, or to (default, allowed values or ANY); returns the values used.
    `where` ("FILE: mapping_kwargs.") prefixes each problem."""
    values = {name: rule[0] for name, rule in rules.items() if rule != IGNORE}
    if not isinstance(given, dict):
        problems.append(f"{where} is a {type(given).__name__}, not a dict of settings")
        return values
    for name, value in given.items():
        value = list(value) if isinstance(value, tuple) else value
        rule = rules.get(name) if isinstance(name, str) else None
        if rule is None:
            problems.append(f"{where}{shown_name(name)}={shown(value)}: a setting ganforge's StyleGAN2 does not have")
        elif rule != IGNORE and not _plain(value):
            problems.append(f"{where}{name}={shown(value)}: not a number, string or short list")
        elif rule != IGNORE and rule[1] is not ANY and value not in rule[1]:
            allowed = " or ".join(repr(v) for v in rule[1])
            problems.append(f"{where}{name}={shown(value)}: ganforge implements only {allowed}")
        elif rule != IGNORE:
            values[name] = value
    return values


def required_kwargs(path: Path, kwargs: dict, names: tuple, problems: list) -> dict:
    """The constructor arguments `names` (removed from `kwargs`); a problem for each missing or not an integer
    (their limits are checked with the whole architecture)."""
    problems += [f"{path}: constructor argument {n} is missing" for n in names if n not in kwargs]
    values = {n: kwargs.pop(n, None) for n in names}
    problems += [
        f"{path}: constructor argument {n}={shown(v)} is not an integer"
        for n, v in values.items()
        if v is not None and type(v) is not int
    ]
    return values


def generator_arch(path: Path, kwargs: dict) -> dict:
    """ganforge Generator kwargs from an official Generator's; UserError listing every unsupported setting."""
    problems = []
    top = required_kwargs(path, kwargs, G_REQUIRED, problems)
    mapping_given = kwargs.pop("mapping_kwargs", {})
    nested = kwargs.pop("synthesis_kwargs", {})
    synthesis_given = {**nested, **kwargs} if isinstance(nested, dict) else nested  # stylegan3: at the top level
    w_dim = top["w_dim"]
    mapping = settings(f"{path}: mapping_kwargs.", mapping_given, _mapping_rules(w_dim, (8, ANY)), problems)
    synthesis = settings(f"{path}: synthesis_kwargs.", synthesis_given, SYNTHESIS_RULES, problems)
    if problems:
        raise UserError(*listed("", problems, f"{path}: "))
    return dict(
        resolution=top["img_resolution"],
        img_channels=top["img_channels"],
        c_dim=top["c_dim"],
        z_dim=top["z_dim"],
        w_dim=w_dim,
        channel_base=synthesis["channel_base"],
        channel_max=synthesis["channel_max"],
        mapping_layers=mapping["num_layers"],
        num_fp16_res=synthesis["num_fp16_res"],
        conv_clamp=synthesis["conv_clamp"],
        architecture=synthesis["architecture"],
    )


def discriminator_arch(path: Path, kwargs: dict) -> dict:
    """ganforge Discriminator kwargs from an official Discriminator's; UserError listing every unsupported setting."""
    problems = []
    top = required_kwargs(path, kwargs, D_REQUIRED, problems)
    base, cmax = kwargs.get("channel_base", 32768), kwargs.get("channel_max", 512)
    cmap = channels_at(4, base, cmax) if isinstance(base, int) and isinstance(cmax, int) else None
    blocks, mapping, epilogue = (kwargs.pop(k, {}) for k in ("block_kwargs", "mapping_kwargs", "epilogue_kwargs"))
    rules = {**SIZES, "architecture": ("resnet", list(ARCHITECTURES)), "cmap_dim": (None, [None, cmap])}
    main = settings(f"{path}: ", kwargs, rules, problems)
    settings(f"{path}: block_kwargs.", blocks, D_BLOCK_RULES, problems)
    if top["c_dim"]:  # the label-embedding network exists only in conditional discriminators
        settings(f"{path}: mapping_kwargs.", mapping, _mapping_rules(cmap, (8, [8])), problems)
    head = settings(f"{path}: epilogue_kwargs.", epilogue, D_EPILOGUE_RULES, problems)
    if head["mbstd_group_size"] is None:
        problems.append(f"{path}: epilogue_kwargs.mbstd_group_size=None (the whole minibatch) is not supported")
    if problems:
        raise UserError(*listed("", problems, f"{path}: "))
    return dict(
        resolution=top["img_resolution"],
        img_channels=top["img_channels"],
        c_dim=top["c_dim"],
        channel_base=main["channel_base"],
        channel_max=main["channel_max"],
        mbstd_group_size=head["mbstd_group_size"],
        num_fp16_res=main["num_fp16_res"],
        conv_clamp=main["conv_clamp"],
        architecture=main["architecture"],
    )


def generator_kwargs(path: Path, record: PersistentRecord) -> dict:
    """The constructor kwargs an official Generator recorded (StyleGAN2 or StyleGAN3)."""
    return _init_kwargs(path, record, "Generator")


def read_generator(path: Path, record: PersistentRecord) -> tuple[Generator, dict]:
    """A ganforge Generator equal to an official StyleGAN2 one, and the architecture it was built from."""
    kwargs = _init_kwargs(path, record, "Generator")
    synthesis = child(record, "synthesis")
    if isinstance(synthesis, PersistentRecord) and child(synthesis, "b4") is None:
        raise UserError(
            f"{path}: its synthesis network is neither StyleGAN2's (no b4 block) nor StyleGAN3's (no "
            "input layer); not a network ganforge can read"
        )
    arch = generator_arch(path, kwargs)
    tensors = drop_resample_filters(path, module_tensors(path, record))
    return build_network(path, Generator, arch, tensors), arch


def read_discriminator(path: Path, record: PersistentRecord) -> tuple[Discriminator, dict]:
    """A ganforge Discriminator equal to an official StyleGAN2 one, and its architecture."""
    arch = discriminator_arch(path, _init_kwargs(path, record, "Discriminator"))
    tensors = drop_resample_filters(path, module_tensors(path, record))
    return build_network(path, Discriminator, arch, tensors), arch
