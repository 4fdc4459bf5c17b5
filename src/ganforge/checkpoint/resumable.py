"""What a training checkpoint must hold for a resume to load it, checked before any of it is used.

`check(state, nimg)` is the one judge of a checkpoint's contents: resuming (`checkpoint.load`, `find_latest`) and
`ganforge checkpoint verify` both call it, so what verify accepts a resume loads, and what verify refuses a resume
refuses (or skips, when it continues a run from its newest checkpoint). It holds every entry of the state
(`checkpoint/layout.py`, with `_CHECKS` below naming each one's check) to what a run writes:
  * `config`: known maths fields, each of its Config field's type; `config_hash` its SHA-256;
  * `G`, `D`, `G_ema`: exactly the tensors (names, shapes, dtypes) of the networks that config describes, built on
    the meta device (shapes only, no memory), all finite;
  * `opt_G`, `opt_D`: Adam over exactly those parameters: one group with Adam's own settings, moments of each
    parameter's shape and dtype, finite, the second moment >= 0;
  * `rng`: states that Python's `random`, NumPy's legacy generator and torch's CPU generator accept (each applied to
    a scratch generator), CUDA states of the size and offset alignment torch's Philox generator accepts;
  * `scaler_*`, `augment`, `sampler`, `loop`: the values and ranges the loop writes, consistent with the config
    (loss scaling only under fp16, ADA's state only with ADA) and with the manifest's progress.
"""

import dataclasses
import functools
import hashlib
import json
import math
import types
import typing

import torch

from ganforge.checkpoint.layout import STATE_KEYS
from ganforge.checkpoint.rng import check_rng
from ganforge.checkpoint.schema import Refused, entries, is_finite_number, number, refuse, scalar, tensor, whole
from ganforge.checkpoint.serialize import describe
from ganforge.checkpoint.store import MAX_NIMG, TENSORS, InvalidCheckpoint
from ganforge.config import AUGMENTS, PRECISIONS, Config, field_defaults, flatten, is_maths, upgrade
from ganforge.config.architecture import Architecture
from ganforge.errors import UserError
from ganforge.families import GENERATORS
from ganforge.limits import MAX_RESOLUTION, MIN_RESOLUTION, architecture_problems
from ganforge.nets.configured import build_networks_from, frozen_parameters, network_arguments

# Bounds on what a stored config may hold besides its architecture (limits.py bounds that, before anything is built).
_MAX_TEXT = 255  # a maths field's string (a dataset's name is a file name); a resume's messages show them
_MAX_PATH = 4096  # other strings: a path
_MAX_ITEMS = 256  # a config list (the kimg of learning-rate steps)
_MAX_COUNT = 2**31  # counters that are not image counts: steps in a row, scaler intervals
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_SCALER_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
_LOOP_KEYS = ("cur_nimg", "cur_tick", "pl_mean", "nonfinite_in_a_row")
_THREADS_FROM = 4  # the first checkpoint format that records the writer's intra-op thread count


def check(state, manifest: dict) -> dict:
    """Raise InvalidCheckpoint naming the first entry of `state` that a resume could not load or continue from;
    `manifest` is the checkpoint's (checked by store.read_manifest): its progress and format version. Returns the
    stored config's fields in today's flat layout (with the defaults of fields it predates), which describe its
    networks (`nets.configured.network_arguments`)."""
    try:
        return _check(state, manifest["nimg"], manifest["format_version"])
    except Refused as refused:
        raise InvalidCheckpoint(str(refused)) from None


def _check(state, nimg: int, version: int) -> dict:
    state = entries(state, "the state", STATE_KEYS)
    fields = _check_config(state["config"], state["config_hash"], version)
    facts = _Facts(fields, *_architecture(fields), nimg, version)
    for key, check_entry in _CHECKS.items():
        check_entry(state[key], key, facts)
    return fields


# ---- config and the networks it describes -------------------------------------------------------------------------


@functools.cache
def _field_types() -> dict[str, object]:
    """Flattened Config field -> its annotation: what a checkpoint's `config` may hold. The maths fields, and the
    others too, since a field that later stopped being maths (a speed switch) is still in older checkpoints."""
    kinds = {"preset": str, "world_size": int}
    for section in dataclasses.fields(Config):
        if dataclasses.is_dataclass(section.type) and section.name != "run":
            kinds |= {f"{section.name}.{f.name}": f.type for f in dataclasses.fields(section.type)}
    return kinds


def _matches(value, kind, text: int = _MAX_TEXT) -> bool:
    """Is `value` (parsed from JSON) a value of the Config annotation `kind`, within the bounds a config holds
    (strings of at most `text` characters)?"""
    if kind is bool:
        return type(value) is bool
    if kind is int:
        return type(value) is int and abs(value) < 2**63
    if kind is float:
        return is_finite_number(value)
    if kind is str:
        return type(value) is str and len(value) <= text
    if kind is type(None):
        return value is None
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        return any(_matches(value, option, text) for option in typing.get_args(kind))
    if typing.get_origin(kind) is tuple:  # tuple[X, ...] comes back from JSON as a list
        item = typing.get_args(kind)[0]
        return type(value) is list and len(value) <= _MAX_ITEMS and all(_matches(v, item) for v in value)
    raise AssertionError(f"no rule for the config field type {kind}")


def _check_config(config, stored_hash, version: int) -> dict:
    """The stored config's fields, each checked against its Config field, with the defaults of those it predates
    (as a resume compares them)."""
    if not isinstance(config, dict):
        refuse("config", f"must be an object, not {describe(config)}")
    if version == 1:  # the whole Config, nested, and a hash of its maths fields under the rules of that day
        config = _version_1_fields(config)
    elif type(stored_hash) is not str or _sha256(config) != stored_hash:
        refuse("config_hash", "is not the SHA-256 of the stored config (one of them was edited)")
    kinds = _field_types()
    for name, value in upgrade(config).items():
        if name not in kinds:
            refuse("config", f"holds {describe(name)}, which is no field of this ganforge's configuration")
        if not _matches(value, kinds[name], _MAX_TEXT if is_maths(name) else _MAX_PATH):
            refuse(f"config/{name}", f"{describe(value)} is no value of this field")
    fields = {name: value for name, value in field_defaults().items() if name in kinds} | upgrade(config)
    missing = [name for name in kinds if name not in fields and is_maths(name)]
    if missing:
        refuse("config", f"has no {missing[0]} (every checkpoint records it)")
    _check_choices(fields)
    return fields


def _version_1_fields(config: dict) -> dict:
    try:
        return {name: value for name, value in flatten(config).items() if not str(name).startswith("run.")}
    except RecursionError:
        refuse("config", "is nested too deeply")


def _sha256(config: dict) -> str | None:
    """`config_hash`'s digest of a stored config; None when it cannot be written as JSON (keys of mixed types)."""
    try:
        return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    except (TypeError, ValueError, RecursionError):
        return None


def _check_choices(fields: dict) -> None:
    for name, choices in (("precision.mode", PRECISIONS), ("augment.mode", AUGMENTS), ("model.generator", GENERATORS)):
        if fields[name] not in choices:
            refuse(f"config/{name}", f"{describe(fields[name])} is not one of {', '.join(choices)}")
    whole(fields["schedule.batch"], "config/schedule.batch", 1, _MAX_COUNT)
    whole(fields["augment.ada_interval"], "config/augment.ada_interval", 1, _MAX_COUNT)
    if fields["model.grow"] is True:  # the growth schedule's lengths, from which the networks' stage is computed
        whole(fields["schedule.grow_from"], "config/schedule.grow_from", MIN_RESOLUTION, MAX_RESOLUTION)
        if not fields["schedule.grow_kimg"] >= 0.001:
            refuse(
                "config/schedule.grow_kimg", f"must be at least one image, not {describe(fields['schedule.grow_kimg'])}"
            )


@dataclasses.dataclass(frozen=True)
class _Net:
    """What a network's state holds: {name: (dtype, shape)} of its state_dict, and its parameters in Adam's order."""

    tensors: dict
    params: tuple


@dataclasses.dataclass(frozen=True)
class _Facts:
    """What every entry but the config's two is checked against: the stored config's fields, the networks they
    describe, and the manifest's progress and format version."""

    fields: dict
    G: _Net
    D: _Net
    nimg: int
    version: int

    def network(self, key: str) -> _Net:
        """The network an entry of the state belongs to: D for `D` and `opt_D`, G for the others that hold one."""
        return self.D if key in ("D", "opt_D") else self.G


def _architecture(fields: dict) -> tuple[_Net, _Net]:
    """(G, D) as the stored config describes them (the construction `train` uses for a run's networks)."""
    try:
        g_arguments, d_arguments = network_arguments(Architecture.from_fields(fields))
    except UserError as error:  # values the architecture is derived from (R3GAN's stages)
        refuse("config", f"describes a network beyond ganforge's limits: {error.problems[0][:200]}")
    _check_bounds(g_arguments, d_arguments)
    freeze_d, freeze_g_mapping = fields.get("optim.freeze_d", 0), fields.get("optim.freeze_g_mapping", False)
    whole(freeze_d, "config/optim.freeze_d", 0, 64)
    if type(freeze_g_mapping) is not bool:
        refuse("config/optim.freeze_g_mapping", f"is {describe(freeze_g_mapping)}, not true or false")
    try:
        frozen = (freeze_d, freeze_g_mapping)
        return _networks(_hashable(g_arguments), _hashable(d_arguments), frozen)
    except UserError as error:  # the constructors' own checks of their arguments
        refuse("config", f"describes no network this ganforge builds ({error.problems[0][:200]})")


def _check_bounds(g_arguments: dict, d_arguments: dict) -> None:
    """The architecture within the limits every network file is held to (limits.py), before anything is built."""
    g_arch = {key: value for key, value in g_arguments.items() if key != "generator"}
    problems = architecture_problems(g_arch) + architecture_problems(d_arguments)  # each its own layout
    if problems:
        refuse("config", f"describes a network beyond ganforge's limits: {problems[0]}")


def _hashable(arguments: dict) -> tuple:
    """Constructor arguments as a cache key: sorted items, lists (R3GAN's stages) as tuples."""
    return tuple(sorted((key, tuple(v) if isinstance(v, list) else v) for key, v in arguments.items()))


@functools.lru_cache(maxsize=8)
def _networks(g_arguments: tuple, d_arguments: tuple, frozen: tuple[int, bool]) -> tuple[_Net, _Net]:
    """G's and D's tensors; each Adam holds its network's parameters but the frozen ones (--freeze-d N,
    --freeze-g-mapping: `frozen`)."""
    with torch.device("meta"):
        G, D = build_networks_from(dict(g_arguments), dict(d_arguments))
    held = frozen_parameters(G, D, *frozen)
    return _spec(G, frozen=held["G"]), _spec(D, frozen=held["D"])


def _spec(net: torch.nn.Module, frozen: set[str] = frozenset()) -> _Net:
    tensors = {name: (t.dtype, tuple(t.shape)) for name, t in net.state_dict().items()}
    return _Net(tensors, tuple(name for name, _ in net.named_parameters() if name not in frozen))


def _check_network(value, where: str, facts: _Facts) -> None:
    spec = facts.network(where)
    value = entries(value, where, spec.tensors)
    for name, (dtype, shape) in spec.tensors.items():
        tensor(value[name], f"{where}/{name}", dtype, shape)


# ---- optimisers and loss scalers ----------------------------------------------------------------------------------


# Settings a resume takes from its own run, whatever the checkpoint says (checkpoints before fused Adam hold None).
_RUN_SETTINGS = ("lr", "betas", "eps", "fused", "params")


@functools.cache
def _adam_settings() -> dict:
    """The settings of an Adam made as training makes it (every setting but `_RUN_SETTINGS` its default): a resume
    keeps them from the checkpoint."""
    opt = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=0.1, betas=(0.0, 0.99), eps=1e-8)
    group = opt.state_dict()["param_groups"][0]
    return {key: value for key, value in group.items() if key not in _RUN_SETTINGS}


def _check_adam(value, where: str, facts: _Facts) -> None:
    spec = facts.network(where)
    value = entries(value, where, ("state", "param_groups"))
    groups = value["param_groups"]
    if not (isinstance(groups, list) and len(groups) == 1):
        refuse(f"{where}/param_groups", f"must be a list of one group, not {describe(groups)}")
    _check_adam_group(groups[0], f"{where}/param_groups/0", len(spec.params))
    moments = value["state"]
    if not isinstance(moments, dict):
        refuse(f"{where}/state", f"must be an object, not {describe(moments)}")
    for index, entry in moments.items():
        if type(index) is not int or not 0 <= index < len(spec.params):
            refuse(f"{where}/state", f"holds {describe(index)}, not a parameter index below {len(spec.params)}")
        dtype, shape = spec.tensors[spec.params[index]]
        _check_moments(entry, f"{where}/state/{index}", dtype, shape)


def _check_adam_group(group, where: str, count: int) -> None:
    settings = _adam_settings()
    group = entries(group, where, ("lr", "betas", "eps", "params"), optional=(*settings, "fused"))
    if not (group.get("fused") is None or type(group["fused"]) is bool):
        refuse(f"{where}/fused", f"must be true, false or null, not {describe(group['fused'])}")
    if group["params"] != list(range(count)):
        found = describe(group["params"])
        refuse(f"{where}/params", f"must list the {count} parameters of the network in order, not {found}")
    for key, default in settings.items():
        if key in group and not (type(group[key]) is type(default) and group[key] == default):
            refuse(f"{where}/{key}", f"must be {default!r} (training sets no other), not {describe(group[key])}")
    number(group["lr"], f"{where}/lr", 0.0)
    number(group["eps"], f"{where}/eps", 0.0)
    betas = group["betas"]
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        refuse(f"{where}/betas", f"must be a pair, not {describe(betas)}")
    for i, beta in enumerate(betas):
        number(beta, f"{where}/betas/{i}", 0.0, 1.0)


def _check_moments(entry, where: str, dtype: torch.dtype, shape: tuple) -> None:
    entry = entries(entry, where, ("step", "exp_avg", "exp_avg_sq"))
    scalar(entry["step"], f"{where}/step", 0.0, float(MAX_NIMG))
    tensor(entry["exp_avg"], f"{where}/exp_avg", dtype, shape)
    second = tensor(entry["exp_avg_sq"], f"{where}/exp_avg_sq", dtype, shape)
    if bool((second < 0).any()):
        refuse(f"{where}/exp_avg_sq", "holds negative values (a second moment is >= 0)", TENSORS)


def _check_scaler(value, where: str, facts: _Facts) -> None:
    """A GradScaler's state: empty when the config trains without loss scaling (it is disabled), full under fp16."""
    if facts.fields["precision.mode"] != "fp16":
        if value != {}:
            refuse(where, f"must be empty (the config trains without loss scaling), not {describe(value)}")
        return
    value = entries(value, where, _SCALER_KEYS)
    if number(value["scale"], f"{where}/scale", 0.0, _FLOAT32_MAX) <= 0:
        refuse(f"{where}/scale", "must be positive")
    number(value["growth_factor"], f"{where}/growth_factor", 1.0, _FLOAT32_MAX)
    number(value["backoff_factor"], f"{where}/backoff_factor", 0.0, 1.0)
    interval = whole(value["growth_interval"], f"{where}/growth_interval", 1, _MAX_COUNT)
    whole(value["_growth_tracker"], f"{where}/_growth_tracker", 0, interval - 1)


# ---- progress, augmentation ---------------------------------------------------------------------------------------


def _check_loop(loop, where: str, facts: _Facts) -> None:
    threads = facts.version >= _THREADS_FROM
    loop = entries(loop, "loop", _LOOP_KEYS + (("intra_op_threads",) if threads else ()))
    if threads:
        whole(loop["intra_op_threads"], "loop/intra_op_threads", 1, _MAX_COUNT)
    cur_nimg = whole(loop["cur_nimg"], "loop/cur_nimg", 0, MAX_NIMG)
    if cur_nimg != facts.nimg:
        refuse("loop/cur_nimg", f"is {cur_nimg}, the manifest says {facts.nimg}")
    whole(loop["cur_tick"], "loop/cur_tick", 0, cur_nimg)  # (a tick is at least one image)
    scalar(loop["pl_mean"], "loop/pl_mean", 0.0, math.inf)
    whole(loop["nonfinite_in_a_row"], "loop/nonfinite_in_a_row", 0, _MAX_COUNT)


def _check_sampler(sampler, where: str, facts: _Facts) -> None:
    """The data's position: the progress, which `_check_loop` found to be the manifest's."""
    cur_nimg = facts.nimg
    sampler = entries(sampler, "sampler", ("position",), optional=("stream",))
    if type(sampler["position"]) is not int or sampler["position"] != cur_nimg:
        refuse("sampler/position", f"must be the progress, {cur_nimg}, not {describe(sampler['position'])}")
    if "stream" in sampler:  # a shard stream's layout: where its world size began, and that world size
        stream = entries(sampler["stream"], "sampler/stream", ("origin", "world_size"))
        origin = whole(stream["origin"], "sampler/stream/origin", 0, cur_nimg)
        world_size = whole(stream["world_size"], "sampler/stream/world_size", 1, _MAX_COUNT)
        if (cur_nimg - origin) % world_size:
            refuse(
                "sampler/stream/origin", f"is not a whole number of steps of {world_size} processes before {cur_nimg}"
            )


def _check_augment(augment, where: str, facts: _Facts) -> None:
    """ADA's pipe and controller state with ADA (the only augmentation that changes as it trains), else nothing."""
    if facts.fields["augment.mode"] != "ada":
        if augment != {}:
            refuse("augment", f"must be empty (the config trains without ADA), not {describe(augment)}")
        return
    augment = entries(augment, "augment", ("pipe", "ada"))
    pipe = entries(augment["pipe"], "augment/pipe", ("p",))
    scalar(pipe["p"], "augment/pipe/p", 0.0, 1.0)
    ada = entries(augment["ada"], "augment/ada", ("sign_sum", "count", "updates", "nimg", "rt"))
    count = scalar(ada["count"], "augment/ada/count", 0.0, float(MAX_NIMG))
    scalar(ada["sign_sum"], "augment/ada/sign_sum", -count, count)
    whole(ada["updates"], "augment/ada/updates", 0, facts.fields["augment.ada_interval"] - 1)
    whole(ada["nimg"], "augment/ada/nimg", 0, MAX_NIMG)
    scalar(ada["rt"], "augment/ada/rt", -1.0, 1.0, nan=True)  # NaN until the first adjustment


def _check_rng(rng, where: str, facts: _Facts) -> None:
    check_rng(rng, facts.version)


# How each entry but the config's two (checked first: they say what the others must hold) is checked, in the order
# checked, which decides the entry a refusal of a file with several faults names: the progress first (the sampler's
# is the loop's), then the networks and what trains them, the RNG states last.
_CHECKS = {
    "loop": _check_loop,
    "sampler": _check_sampler,
    "G": _check_network,
    "D": _check_network,
    "G_ema": _check_network,
    "opt_G": _check_adam,
    "opt_D": _check_adam,
    "scaler_G": _check_scaler,
    "scaler_D": _check_scaler,
    "augment": _check_augment,
    "rng": _check_rng,
}
