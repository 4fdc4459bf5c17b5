"""docs/official-tensor-mapping.md is what the networks hold: its Generator and Discriminator tables, expanded over
their placeholders, list exactly the state_dict keys of ganforge's networks, with the documented shapes."""

import itertools
import re
from pathlib import Path

import pytest
import torch

from ganforge.nets import Discriminator, Generator

DOC = Path(__file__).resolve().parents[2] / "docs" / "official-tensor-mapping.md"
ARCH = dict(resolution=32, img_channels=2, channel_base=256, channel_max=32)


def table_rows(section: str) -> list[tuple[str, str, str]]:
    """(key cell, shape cell, meaning cell) of the first table under `## section`."""
    text = DOC.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:4] for line in text.splitlines() if line.startswith("| `")]
    return [tuple(cell.strip() for cell in row) for row in rows]


def documented(section: str, ranges: dict, conditional: bool) -> dict[str, str]:
    """Every documented key (placeholders expanded) -> its shape expression."""
    keys = {}
    for key_cell, shape_cell, meaning in table_rows(section):
        if not conditional and ("c_dim > 0" in meaning or "conditional only" in meaning):
            continue
        templates, shapes = re.findall(r"`([^`]+)`", key_cell), re.findall(r"`([^`]+)`", shape_cell)
        assert len(templates) == len(shapes), key_cell
        first = templates[0]
        for template, shape in zip(templates, shapes, strict=True):
            template = first.rsplit(".", 1)[0] + template if template.startswith(".") else template
            keys.update(expand(template, shape, ranges))
    return keys


def expand(template: str, shape: str, ranges: dict) -> dict[str, str]:
    """`b{r}.conv{0,1}` -> one key per combination; the shape expression gets the values of r and res."""
    fields = re.findall(r"\{([^}]*)\}", template)
    choices = [ranges.get(f) or (f.split(",") if "," in f else range(int(f[0]), int(f[-1]) + 1)) for f in fields]
    out = {}
    for values in itertools.product(*choices):
        key, binding = template, {}
        for field, value in zip(fields, values, strict=True):
            key = key.replace("{" + field + "}", str(value), 1)
            if field in ("r", "res"):
                binding[field] = int(value)
        out[key] = (shape, binding)
    return out


def evaluate(shape: str, binding: dict, names: dict) -> list:
    """`[C_r, C_{r/2}, 3, 3]` -> numbers; `in` and `I` (a layer's input width) stay None (any)."""
    inner = shape.strip("[]")
    if not inner:
        return []
    dims = []
    for term in inner.split(","):
        term = re.sub(r"C_\{r/2\}", "C(r // 2)", term.strip())
        term = re.sub(r"C_(res|r|\d+)", r"C(\1)", term).replace("·", "*")
        dims.append(None if term in ("in", "I") else eval(term, {"__builtins__": {}}, {**names, **binding}))
    return dims


def check(net, documented_keys: dict, names: dict) -> None:
    actual = net.state_dict()
    assert set(documented_keys) == set(actual), set(documented_keys) ^ set(actual)
    for key, (shape, binding) in documented_keys.items():
        dims = evaluate(shape, binding, names)
        assert len(dims) == actual[key].ndim, key
        assert all(d is None or d == n for d, n in zip(dims, actual[key].shape, strict=True)), (key, dims)


@pytest.mark.parametrize("c_dim", [0, 3])
def test_generator_table_lists_every_tensor_with_its_shape(c_dim):
    with torch.device("meta"):
        G = Generator(**ARCH, c_dim=c_dim, z_dim=12, w_dim=16, mapping_layers=3)
    ranges = {"i": range(3), "r": [4, 8, 16, 32]}
    keys = documented("Generator", ranges, conditional=c_dim > 0)
    keys = {k: v for k, v in keys.items() if not k.startswith("synthesis.b4.conv0")}  # b4 starts from the constant
    names = {"C": lambda r: min(256 // r, 32), "w_dim": 16, "c_dim": c_dim, "img_channels": 2}
    check(G, keys, names)


@pytest.mark.parametrize("c_dim", [0, 3])
def test_discriminator_table_lists_every_tensor_with_its_shape(c_dim):
    with torch.device("meta"):
        D = Discriminator(**ARCH, c_dim=c_dim)
    keys = documented("Discriminator", {"r": [32, 16, 8], "res": [32]}, conditional=c_dim > 0)
    names = {"C": lambda r: min(256 // r, 32), "c_dim": c_dim, "img_channels": 2, "cmap_dim": 32 if c_dim else 0}  # C_4
    check(D, keys, names)
