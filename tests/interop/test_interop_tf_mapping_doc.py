"""docs/official-tensor-mapping.md's TensorFlow tables are what the reader does: every row, expanded over its
placeholders, names the variable and transform `tf_stylegan2` uses for that ganforge key, and the rows together cover
every tensor of ganforge's networks."""

import math
import re
from pathlib import Path

import pytest
import torch

from ganforge.interop.tf_stylegan2 import discriminator_variable, generator_variable
from ganforge.limits import ARCHITECTURES
from ganforge.nets import Discriminator, Generator

DOC = Path(__file__).resolve().parents[2] / "docs" / "official-tensor-mapping.md"
TF_PART = DOC.read_text().split("\n# TensorFlow-era StyleGAN2 pickles → ganforge tensors\n", 1)[1]
WORDS = {"as is": "as_is", "dense": "dense", "conv": "conv", "up conv": "up_conv", "+1": "mod_bias", "drop 1s": "const"}
ARCH = dict(resolution=32, channel_base=256, channel_max=32)


def rows(section: str) -> list[list[str]]:
    text = TF_PART.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.split("|")[1:4]] for line in text.splitlines() if line.startswith("| `")]


def fields() -> dict[str, tuple[str, str]]:
    """ganforge field -> (TF field, transform), from the sentence under the generator table."""
    sentence = TF_PART.split("Fields of a layer:", 1)[1].split("\n\n", 1)[0]
    pairs = re.findall(r"`(\w+)` →\s+`([\w.]+)` \(([^);]+)", sentence)
    return {key: (tf, WORDS[word.strip()]) for tf, key, word in pairs}


def expand(template: str, values: dict) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def documented(section: str, placeholders: list[dict]) -> dict[str, tuple[str, str | None]]:
    """ganforge key -> (TF variable, transform) for every plain row (one to one, two names per cell at most)."""
    out = {}
    for tf_cell, key_cell, transform in rows(section):
        tf_names, keys = re.findall(r"`([^`]+)`", tf_cell), re.findall(r"`([^`]+)`", key_cell)
        if "…" in tf_cell or "{n}" in tf_cell or not keys:
            continue
        words = [WORDS.get(w.strip()) for w in transform.split("(")[0].split("/")]
        tf_names = [tf_names[0].rsplit("/", 1)[0] + t if t.startswith("/") else t for t in tf_names]
        keys = [keys[0].rsplit(".", 1)[0] + k if k.startswith(".") else k for k in keys]
        for values in placeholders:
            for tf_name, key, word in zip(tf_names, keys, words * len(keys) if len(words) == 1 else words, strict=True):
                out[expand(key, values)] = (expand(tf_name, values), word)
    return out


def test_the_generator_table_is_what_the_reader_maps():
    with torch.device("meta"):  # the tensors of every layout
        keys = set().union(*(Generator(**ARCH, c_dim=3, z_dim=8, w_dim=8, mapping_layers=3, architecture=layout)
                             .state_dict() for layout in ARCHITECTURES))  # fmt: skip
    plain = documented("Generator variables", [{"i": i, "r": r} for i in range(3) for r in (8, 16, 32)])
    plain = {k: v for k, v in plain.items() if k in keys or "{" not in k}
    per_field = fields()
    covered = set()
    for key in keys:
        if key in plain:
            assert generator_variable(key) == plain[key], key
        elif key.endswith("noise_const"):
            layer, res = key.split(".")[2], int(key.split(".")[1][1:])
            n = 0 if res == 4 else 2 * int(math.log2(res)) - (5 if layer == "conv0" else 4)
            assert generator_variable(key) == (f"synthesis/noise{n}", "noise"), key
        else:
            block, layer, field = key.split(".")[1], key.split(".")[2], ".".join(key.split(".")[3:])
            res = int(block[1:])
            scope = {"conv0": "Conv0_up", "conv1": "Conv1" if res > 4 else "Conv", "torgb": "ToRGB"}[layer]
            tf_field, word = per_field[field]
            word = "up_conv" if (layer, field) == ("conv0", "weight") else word  # the row's own note
            assert generator_variable(key) == (f"synthesis/{res}x{res}/{scope}/{tf_field}", word), key
        covered.add(key)
    assert covered == keys and len(plain) >= 9


@pytest.mark.parametrize("c_dim", [0, 3])
@pytest.mark.parametrize("layout", ARCHITECTURES)
def test_the_discriminator_table_is_what_the_reader_maps(c_dim, layout):
    with torch.device("meta"):
        keys = set(Discriminator(**ARCH, c_dim=c_dim, architecture=layout).state_dict())
    plain = documented("Discriminator variables", [{"i": i, "r": r} for i in range(8) for r in (8, 16, 32)])
    assert keys <= set(plain), keys - set(plain)
    for key in keys:
        assert discriminator_variable(key) == plain[key], key
