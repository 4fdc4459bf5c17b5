"""R3GAN's released networks (github.com/brownvc/R3GAN), read as data by `r3gan_pickle`, -> ganforge R3GANGenerator /
R3GANDiscriminator.

The released networks record no constructor arguments, so the architecture is read from what the file holds, after
checking that every module is the class the released code puts there (and no other module is present): widths from
the stages' weights, cardinalities from each stage's grouped convolution (`groups`), blocks from the number of
layers per stage, expansion and kernel from the first block's weights, z_dim, c_dim and img_resolution from G's
attributes (D's from its class embedding and its number of stages), num_fp16_res from how many of the top stages
compute in bfloat16 (`DataType`). The architecture is checked against ganforge's limits and sized on the meta device,
and the file's tensors compared with it, before anything is allocated (`tensors.build_network`).

Tensor names, released -> ganforge (stage i counts from 4x4 upwards in G, from the image's resolution down in D, as
both codes do; a D stage's transition is its last layer, t = its number of blocks):

    G  Model.MainLayers.0.Layers.0.{Basis, LinearLayer.weight}   synthesis.stages.0.transition.{basis, linear}
       Model.MainLayers.i.Layers.0.LinearLayer.Layer.weight      synthesis.stages.i.transition.conv.weight
       Model.MainLayers.i.Layers.j (j >= 1)                      synthesis.stages.i.blocks.(j-1)
       Model.AggregationLayer.Layer.weight                       synthesis.to_rgb.weight
       Model.EmbeddingLayer.weight                               mapping.embed
    D  Model.ExtractionLayer.Layer.weight                        from_rgb.weight
       Model.MainLayers.i.Layers.j (j < t)                       stages.i.blocks.j
       Model.MainLayers.i.Layers.t.LinearLayer.Layer.weight      stages.i.transition.conv.weight
       Model.MainLayers.i.Layers.t.{Basis.weight, LinearLayer.weight}   stages.i.transition.{depthwise, linear} (4x4)
       Model.EmbeddingLayer.weight                               embed
    in a block: LinearLayer{k}.Layer.weight -> conv{k}.weight, NonLinearity{k}.Bias -> act{k}.bias

The resamplers' `Kernel` buffers must be the [1, 3, 3, 1] filter the released code makes (ResamplingFilter [1, 2, 1]
convolved with [1, 1]), which ganforge recomputes; any other is refused.
"""

import dataclasses
import re
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.interop.official import module_tensors
from ganforge.interop.r3gan_pickle import ModuleRecord
from ganforge.interop.tensors import build_network
from ganforge.limits import MAX_STAGES, shown, shown_name
from ganforge.nets import R3GANDiscriminator, R3GANGenerator
from ganforge.nets.layers import fir_kernel

STAGES = "Model.MainLayers"
LAYER = re.compile(r"Model\.MainLayers\.(\d+)\.Layers\.(\d+)\.(.+)")
EMBEDDING = "Model.EmbeddingLayer.weight"
BLOCK_TENSORS = {f"LinearLayer{k}.Layer.weight": f"conv{k}.weight" for k in (1, 2, 3)}
BLOCK_TENSORS |= {f"NonLinearity{k}.Bias": f"act{k}.bias" for k in (1, 2)}
G_TRANSITION = {"Basis": "basis", "LinearLayer.weight": "linear", "LinearLayer.Layer.weight": "conv.weight"}
D_TRANSITION = {"Basis.weight": "depthwise", "LinearLayer.weight": "linear", "LinearLayer.Layer.weight": "conv.weight"}
G_OTHER = {"Model.AggregationLayer.Layer.weight": "synthesis.to_rgb.weight", EMBEDDING: "mapping.embed"}
D_OTHER = {"Model.ExtractionLayer.Layer.weight": "from_rgb.weight", EMBEDDING: "embed"}
DATA_TYPES = (torch.float32, torch.bfloat16)


@dataclasses.dataclass(frozen=True)
class Spec:
    """What the released code puts at one place of a network: the module's class, its children (a name ending in
    "?" may be absent; a None spec is checked by the caller), and for a Conv2d how it is grouped: "one", "any" (a
    block's grouped convolution) or "depthwise" (D's 4x4 basis, the only Conv2d that runs its own forward)."""

    cls: str
    children: dict = dataclasses.field(default_factory=dict)
    groups: str | None = None


RELEASED, CONV2D = "R3GAN.Networks.", "torch.nn.modules.conv.Conv2d"


def _conv(groups: str = "one") -> Spec:
    return Spec(RELEASED + "Convolution", {"Layer": Spec(CONV2D, groups=groups)})


def _resample(layer: str, resampler: str) -> Spec:
    return Spec(RELEASED + layer, {"Resampler": Spec("R3GAN.Resamplers." + resampler), "LinearLayer?": _conv()})


def _network(name: str, io_layer: str) -> Spec:
    """training/networks.py's wrapper around R3GAN/Networks.py's network of the same name."""
    model = Spec(RELEASED + name, {"MainLayers": None, io_layer: _conv(), "EmbeddingLayer?": LINEAR})
    return Spec("training.networks." + name, {"Model": model})


LINEAR = Spec("torch.nn.modules.linear.Linear")
ACTIVATION = Spec("R3GAN.FusedOperators.BiasedActivationCUDA")
BLOCK = Spec(
    RELEASED + "ResidualBlock",
    {"LinearLayer1": _conv(), "LinearLayer2": _conv("any"), "LinearLayer3": _conv()}
    | {"NonLinearity1": ACTIVATION, "NonLinearity2": ACTIVATION},
)
G_BASIS = Spec(RELEASED + "GenerativeBasis", {"LinearLayer": LINEAR})
D_BASIS = Spec(RELEASED + "DiscriminativeBasis", {"Basis": Spec(CONV2D, groups="depthwise"), "LinearLayer": LINEAR})
UPSAMPLE = _resample("UpsampleLayer", "InterpolativeUpsamplerCUDA")
DOWNSAMPLE = _resample("DownsampleLayer", "InterpolativeDownsamplerCUDA")
G_TOP = _network("Generator", "AggregationLayer")
D_TOP = _network("Discriminator", "ExtractionLayer")


def read_generator(path: Path, top: ModuleRecord, which: str = "G_ema") -> tuple[R3GANGenerator, dict]:
    """A ganforge R3GANGenerator computing what the released generator `top` computes, and its architecture."""
    _check_module(path, which, top, G_TOP)
    stages, layers = _stage_layers(path, which, top, "GeneratorStage")
    for i, stage in enumerate(layers):  # the transition first, then the blocks
        _check_module(path, f"{which}.{STAGES}.{i}.Layers.0", stage[0], UPSAMPLE if i else G_BASIS)
        for j, block in enumerate(stage[1:], start=1):
            _check_module(path, f"{which}.{STAGES}.{i}.Layers.{j}", block, BLOCK)
    kernels = [f"{STAGES}.{i}.Layers.0.Resampler.Kernel" for i in range(1, len(layers))]
    tensors = _without_kernels(path, which, module_tensors(path, top), kernels)
    arch = _generator_arch(path, which, top, stages, layers, tensors)
    renamed = _renamed(tensors, [0] * len(layers), G_TRANSITION, G_OTHER, "synthesis.")
    return build_network(path, R3GANGenerator, arch, renamed), arch


def read_discriminator(path: Path, top: ModuleRecord) -> tuple[R3GANDiscriminator, dict]:
    """A ganforge R3GANDiscriminator computing what the released discriminator `top` computes, and its architecture.
    The released stages run from the image's resolution down; ganforge's lists from 4x4 up."""
    _check_module(path, "D", top, D_TOP)
    stages, layers = _stage_layers(path, "D", top, "DiscriminatorStage")
    if len(layers) > MAX_STAGES:
        raise UserError(f"{path}: D has {len(layers)} stages; ganforge supports at most {MAX_STAGES} (to 1024x1024)")
    for i, stage in enumerate(layers):  # the blocks first, then the transition
        for j, block in enumerate(stage[:-1]):
            _check_module(path, f"D.{STAGES}.{i}.Layers.{j}", block, BLOCK)
        last = DOWNSAMPLE if i < len(layers) - 1 else D_BASIS
        _check_module(path, f"D.{STAGES}.{i}.Layers.{len(stage) - 1}", stage[-1], last)
    kernels = [f"{STAGES}.{i}.Layers.{len(stage) - 1}.Resampler.Kernel" for i, stage in enumerate(layers[:-1])]
    tensors = _without_kernels(path, "D", module_tensors(path, top), kernels)
    arch = _discriminator_arch(path, stages, layers, tensors)
    renamed = _renamed(tensors, [len(stage) - 1 for stage in layers], D_TRANSITION, D_OTHER, "")
    return build_network(path, R3GANDiscriminator, arch, renamed), arch


def _generator_arch(path: Path, which: str, top: ModuleRecord, stages: list, layers: list, tensors: dict) -> dict:
    """R3GANGenerator's arguments from the released generator's attributes and tensor shapes."""
    z_dim, c_dim, resolution = (_attribute(path, which, top, name) for name in ("z_dim", "c_dim", "img_resolution"))
    inputs = _shape(path, which, tensors, f"{STAGES}.0.Layers.0.LinearLayer.weight", 2)[1]
    embed_dim = _shape(path, which, tensors, EMBEDDING, 2)[0] if EMBEDDING in tensors else 0
    if inputs != z_dim + embed_dim:
        raise UserError(_input_problem(path, which, inputs, z_dim, c_dim, embed_dim))
    widths = [_shape(path, which, tensors, f"{STAGES}.0.Layers.0.Basis", 3)[0]]
    for i in range(1, len(layers)):  # a transition has a 1x1 convolution where the width changes
        conv = f"{STAGES}.{i}.Layers.0.LinearLayer.Layer.weight"
        widths.append(_shape(path, which, tensors, conv, 4)[0] if conv in tensors else widths[-1])
    reduced = _reduced(path, which, stages)
    if reduced != sorted(reduced):  # ganforge's num_fp16_res counts the top stages, G's last
        raise UserError(f"{path}: {which} computes stages {_listed(reduced)} (from 4x4) in bfloat16; ganforge can "
                        "only do so for the top stages, as the released configurations do")  # fmt: skip
    channels = _shape(path, which, tensors, "Model.AggregationLayer.Layer.weight", 4)[0]
    return dict(resolution=resolution, img_channels=channels, c_dim=c_dim, z_dim=z_dim, widths=widths,
                **_stage_settings(path, which, layers, tensors, first_block=1), embed_dim=embed_dim,
                num_fp16_res=sum(reduced))  # fmt: skip


def _discriminator_arch(path: Path, stages: list, layers: list, tensors: dict) -> dict:
    """R3GANDiscriminator's arguments from the released discriminator's tensor shapes (it records no attributes)."""
    extraction = _shape(path, "D", tensors, "Model.ExtractionLayer.Layer.weight", 4)  # [width, channels, 1, 1]
    widths = [extraction[0]]
    for i, stage in enumerate(layers[:-1]):  # a transition has a 1x1 convolution where the width changes
        conv = f"{STAGES}.{i}.Layers.{len(stage) - 1}.LinearLayer.Layer.weight"
        widths.append(_shape(path, "D", tensors, conv, 4)[0] if conv in tensors else widths[-1])
    embed_dim, c_dim = _shape(path, "D", tensors, EMBEDDING, 2) if EMBEDDING in tensors else (0, 0)
    reduced = _reduced(path, "D", stages)
    if reduced != sorted(reduced, reverse=True):  # ganforge's num_fp16_res counts the top stages, D's first
        raise UserError(f"{path}: D computes stages {_listed(reduced)} (from the image's resolution) in bfloat16; "
                        "ganforge can only do so for the top stages, as the released configurations do")  # fmt: skip
    settings = _stage_settings(path, "D", layers, tensors, first_block=0)
    return dict(resolution=4 << (len(layers) - 1), img_channels=extraction[1], c_dim=c_dim, widths=widths[::-1],
                cardinalities=settings.pop("cardinalities")[::-1], blocks=settings.pop("blocks")[::-1], **settings,
                embed_dim=embed_dim, num_fp16_res=sum(reduced))  # fmt: skip


def _stage_settings(path: Path, which: str, layers: list, tensors: dict, first_block: int) -> dict:
    """cardinalities (each stage's grouped convolution's `groups`) and blocks, in the released order of the stages,
    and the expansion and kernel of the first block. A stage without blocks gets cardinality 1 (the limits refuse
    it); an expansion that is not a whole number is rounded, for the shape check to report."""
    blocks = [len(stage) - 1 for stage in layers]
    cardinalities = [_child(stage[first_block], "LinearLayer2.Layer").state["groups"] if count else 1
                     for stage, count in zip(layers, blocks, strict=True)]  # fmt: skip
    settings = dict(cardinalities=cardinalities, blocks=blocks, expansion=0, kernel=0)
    i = next((i for i, count in enumerate(blocks) if count), None)
    if i is not None:
        block = f"{STAGES}.{i}.Layers.{first_block}"
        expanded, width = _shape(path, which, tensors, f"{block}.LinearLayer1.Layer.weight", 4)[:2]
        settings["expansion"] = max(expanded // width, 1) if width else 0
        settings["kernel"] = _shape(path, which, tensors, f"{block}.LinearLayer2.Layer.weight", 4)[-1]
    return settings


def _reduced(path: Path, which: str, stages: list) -> list[bool]:
    """Which stages compute in bfloat16 (their DataType), in the released order."""
    return [_data_type(path, f"{which}.{STAGES}.{i}", stage) is torch.bfloat16 for i, stage in enumerate(stages)]


def _input_problem(path: Path, which: str, inputs: int, z_dim: int, c_dim: int, embed_dim: int) -> str:
    first = f"first layer ({STAGES}.0.Layers.0.LinearLayer) takes {inputs} inputs"
    if not c_dim and inputs > z_dim:
        return (
            f"{path}: {which} has no classes, but its {first}: z_dim={z_dim} plus a class embedding of "
            f"{inputs - z_dim}. It was configured with a class-embedding size and no classes (as R3GAN's "
            "unconditional ImageNet configurations are), so it cannot run in the released code either; ganforge "
            "cannot import it"
        )
    return f"{path}: {which}'s {first}, but z_dim={z_dim} and a class embedding of {embed_dim} make {z_dim + embed_dim}"


def _without_kernels(path: Path, which: str, tensors: dict, kernels: list[str]) -> dict:
    """`tensors` without the resamplers' filters, each checked to be the one ganforge recomputes."""
    for name in kernels:
        value = tensors.get(name)
        plain = isinstance(value, torch.Tensor) and value.layout == torch.strided and value.is_floating_point()
        if not plain or value.shape != (4, 4) or not torch.equal(value.to(torch.float32), fir_kernel()):
            raise UserError(
                f"{path}: {which}.{name} is {'missing' if value is None else 'not the [1, 3, 3, 1] filter'}; ganforge "
                "implements only the released R3GAN's resampling filter (ResamplingFilter [1, 2, 1])"
            )
    return {name: value for name, value in tensors.items() if name not in kernels}


def _renamed(tensors: dict, transitions: list[int], transition: dict, other: dict, g_prefix: str) -> dict:
    """The tensors under ganforge's names; `transitions[i]` is the index of stage i's transition layer. A name the
    map does not know is kept, for the shape check to report as unexpected."""
    renamed = {}
    for name, value in tensors.items():
        renamed[_ganforge_name(name, transitions, transition, other, g_prefix)] = value
    return renamed


def _ganforge_name(name: str, transitions: list[int], transition: dict, other: dict, g_prefix: str) -> str:
    if name in other:
        return other[name]
    match = LAYER.fullmatch(name)
    if match is None or int(match[1]) >= len(transitions):
        return name
    i, j, rest = int(match[1]), int(match[2]), match[3]
    t = transitions[i]
    if j == t and rest in transition:
        return f"{g_prefix}stages.{i}.transition.{transition[rest]}"
    if j != t and rest in BLOCK_TENSORS:
        return f"{g_prefix}stages.{i}.blocks.{j - 1 if j > t else j}.{BLOCK_TENSORS[rest]}"
    return name


# --- the module tree ---------------------------------------------------------------------------------------------


def _check_module(path: Path, where: str, record, spec: Spec) -> None:
    """UserError unless `record` is a module of the class `spec` names, with exactly the children it allows."""
    if not isinstance(record, ModuleRecord) or record.class_name != spec.cls:
        what = shown_name(record.class_name) if isinstance(record, ModuleRecord) else type(record).__name__
        raise UserError(f"{path}: {where} is a {what}, where the released R3GAN code has a {spec.cls}")
    children = _children(path, where, record)
    allowed = {name.removesuffix("?"): name.endswith("?") for name in spec.children}
    extra = [shown_name(name) for name in children if name not in allowed]
    missing = [name for name, optional in allowed.items() if not optional and name not in children]
    if extra or missing:
        found = "; ".join(f"{what} {', '.join(names)}" for what, names in (("unknown", extra), ("missing", missing))
                          if names)  # fmt: skip
        raise UserError(f"{path}: {where} ({spec.cls}) has child modules the released code does not give it: {found}")
    for name, child in spec.children.items():
        name = name.removesuffix("?")
        if child is not None and name in children:
            _check_module(path, f"{where}.{name}", children[name], child)
    if spec.groups:
        _check_conv(path, where, record, spec.groups)


def _check_conv(path: Path, where: str, record: ModuleRecord, groups: str) -> None:
    """UserError unless the Conv2d's settings are those its forward pass in the released code relies on: 'same'
    zero padding (none for D's 4x4 basis, which also runs Conv2d's own forward: stride 1, no dilation, one group per
    channel), one group but in a block's grouped convolution."""
    params = record.state.get("_parameters")
    weight = params.get("weight") if isinstance(params, dict) else None
    if not isinstance(weight, torch.Tensor) or weight.ndim != 4:
        raise UserError(f"{path}: {where} (a Conv2d) has no 4-dimensional weight")
    pad = 0 if groups == "depthwise" else weight.shape[-1] // 2
    want = {"padding": (pad, pad)}
    if groups == "depthwise":
        want |= {"stride": (1, 1), "dilation": (1, 1), "padding_mode": "zeros", "groups": weight.shape[0]}
    elif groups == "one":
        want["groups"] = 1
    state = record.state
    problems = [f"{name}={shown(state.get(name))}, not {value!r}" for name, value in want.items()
                if not _same(state.get(name), value)]  # fmt: skip
    if groups == "any" and not (type(state.get("groups")) is int and state["groups"] >= 1):
        problems.append(f"groups={shown(state.get('groups'))}, not a positive integer")
    if problems:
        raise UserError(f"{path}: {where} (a Conv2d) has {'; '.join(problems)}: not as the released code makes it")


def _same(value, want) -> bool:
    """value == want for plain values, never comparing what a file holds in any other type (a tensor)."""
    if type(value) is not type(want):
        return False
    return (all(type(v) is int for v in value) if isinstance(want, tuple) else True) and value == want


def _children(path: Path, where: str, record: ModuleRecord) -> dict:
    children = record.state.get("_modules")
    if not isinstance(children, dict):
        raise UserError(f"{path}: {where} ({record.class_name}) has no child modules; not a torch module")
    return children


def _child(record: ModuleRecord, dotted: str) -> ModuleRecord:
    """A descendant already checked to exist (by `_check_module`)."""
    for name in dotted.split("."):
        record = record.state["_modules"][name]
    return record


def _stage_layers(path: Path, which: str, top: ModuleRecord, stage_class: str) -> tuple[list, list[list]]:
    """The stages and each one's layers, once both lists are checked to be what the released code makes."""
    stages = _items(path, f"{which}.{STAGES}", _child(top, STAGES))
    layers = []
    for i, stage in enumerate(stages):
        _check_module(path, f"{which}.{STAGES}.{i}", stage, Spec(RELEASED + stage_class, {"Layers": None}))
        layers.append(_items(path, f"{which}.{STAGES}.{i}.Layers", _child(stage, "Layers")))
    return stages, layers


def _items(path: Path, where: str, record) -> list:
    """The modules of a ModuleList record, named 0, 1, ... in order; UserError otherwise."""
    if not isinstance(record, ModuleRecord) or record.class_name != "torch.nn.modules.container.ModuleList":
        what = shown_name(record.class_name) if isinstance(record, ModuleRecord) else type(record).__name__
        raise UserError(f"{path}: {where} is a {what}, where the released R3GAN code has a ModuleList")
    children = _children(path, where, record)
    if list(children) != [str(i) for i in range(len(children))] or not children:
        raise UserError(f"{path}: {where} is a ModuleList whose items are not named 0, 1, ... in order")
    return list(children.values())


def _attribute(path: Path, which: str, record: ModuleRecord, name: str) -> int:
    value = record.state.get(name)
    if type(value) is not int or value < 0:
        raise UserError(f"{path}: {which}.{name}={shown(value)}, not a non-negative integer")
    return value


def _data_type(path: Path, where: str, stage: ModuleRecord) -> torch.dtype:
    value = stage.state.get("DataType")
    if not any(value is dtype for dtype in DATA_TYPES):
        raise UserError(f"{path}: {where}.DataType is {shown(value)}, not torch.float32 or torch.bfloat16")
    return value


def _shape(path: Path, which: str, tensors: dict, name: str, ndim: int) -> tuple[int, ...]:
    value = tensors.get(name)
    if not isinstance(value, torch.Tensor) or value.ndim != ndim:
        what = "missing" if value is None else f"not a {ndim}-dimensional tensor"
        raise UserError(f"{path}: {which}.{name} is {what}; not a released R3GAN network")
    return tuple(value.shape)


def _listed(flags: list[bool]) -> str:
    return ", ".join(str(i) for i, flag in enumerate(flags) if flag)
