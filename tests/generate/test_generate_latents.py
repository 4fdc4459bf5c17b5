"""Latent helpers against closed forms and loops: spherical interpolation, looping paths, the style-mixing table."""

import math

import numpy as np
import torch

from ganforge.generate.labels import one_vector
from ganforge.generate.latents import loop_path, mix_styles, slerp, z_from_seeds


def test_z_is_numpy_randomstate_normal_and_labels_are_one_hot():
    assert torch.equal(z_from_seeds([7, 0], 5)[0], torch.from_numpy(np.random.RandomState(7).randn(5)).float())
    assert one_vector(2, None, 3) == [0.0, 0.0, 1.0] and one_vector(None, (0.5, 2.0), 2) == [0.5, 2.0]
    assert one_vector(None, None, 0) == []


def test_slerp_follows_the_great_circle():
    a, b = torch.tensor([2.0, 0.0, 0.0]), torch.tensor([0.0, 2.0, 0.0])  # orthogonal, same radius
    t = torch.tensor([0.0, 0.25, 0.5, 1.0])
    expected = torch.stack([2 * torch.tensor([math.cos(x * math.pi / 2), math.sin(x * math.pi / 2), 0.0]) for x in t])
    torch.testing.assert_close(slerp(a, b, t), expected)
    torch.testing.assert_close(slerp(a, 3 * a, t), torch.stack([a, 1.5 * a, 2 * a, 3 * a]))  # parallel: a line


def test_loop_path_closes_the_loop():
    keys = torch.randn(3, 4, 2)
    path = loop_path(keys, 4, spherical=False)
    assert path.shape == (12, 4, 2)
    for k in range(3):
        assert torch.equal(path[4 * k], keys[k])
        torch.testing.assert_close(path[4 * k + 2], (keys[k] + keys[(k + 1) % 3]) / 2)
    z = torch.randn(2, 6)
    spherical = loop_path(z, 5, spherical=True)
    torch.testing.assert_close(spherical[[0, 5]], z)
    torch.testing.assert_close(spherical[3], slerp(z[0], z[1], torch.tensor([0.6]))[0])


def test_mix_styles_takes_the_listed_layers_from_each_column():
    rows, cols = torch.randn(2, 5, 3), torch.randn(3, 5, 3)
    table = mix_styles(rows, cols, [0, 3])
    for r in range(2):
        for c in range(3):
            expected = rows[r].clone()
            expected[[0, 3]] = cols[c][[0, 3]]
            assert torch.equal(table[r * 3 + c], expected)
