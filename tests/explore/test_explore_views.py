"""`ganforge explore`'s views of one image beyond a seed, against the real server: rows of projected latents (only
files the server lists), ws moved along a direction, free style-mixing ranges, one feature map enlarged, the image's
spectrum, and the render time. Each image is the file of the `generate` command sent with it; what no command writes
comes with the command of its image; every bad parameter is one 400 line."""

import io

import numpy as np
import PIL.Image
import pytest
from explore_helpers import explore_server, fetch, generated, get, tiny_networks

from ganforge.explore.spectrum import log_spectrum
from ganforge.nets.noise import noise_buffer_names
from ganforge.projected import write_projected_w
from ganforge.snapshot import load_snapshot

NUM_WS, W_DIM = 6, 8  # the tiny StyleGAN2 of explore_helpers


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explore-views")
    nets = tiny_networks(folder)
    G, _ = load_snapshot(nets["sg2"])
    rng = np.random.default_rng(0)
    noise = {name: rng.standard_normal((2, *G.synthesis.get_buffer(name).shape)) for name in noise_buffer_names(G)}
    projections = folder / "projections"
    projections.mkdir()
    write_projected_w(projections / "two.npz", rng.standard_normal((2, NUM_WS, W_DIM)), noise)
    write_projected_w(projections / "direction.npz", rng.standard_normal((1, NUM_WS, W_DIM)))
    write_projected_w(projections / "changing.npz", rng.standard_normal((1, NUM_WS, W_DIM)))
    (projections / "hostile.npz").write_bytes(b"PK\x03\x04" + b"\xff" * 64)
    (projections / "notes.txt").write_text("not listed")
    (projections / "target7" / "deeper").mkdir(parents=True)  # as `ganforge project --outdir projections` writes
    write_projected_w(projections / "target7" / "projected_w.npz", rng.standard_normal((1, NUM_WS, W_DIM)))
    write_projected_w(projections / "target7" / "deeper" / "too-deep.npz", rng.standard_normal((1, NUM_WS, W_DIM)))
    (folder / "secret.npz").write_bytes(b"never listed")
    write_projected_w(folder / "one.npz", rng.standard_normal((1, NUM_WS, W_DIM)))
    return nets | {"projections": projections, "one": folder / "one.npz", "secret": folder / "secret.npz"}


@pytest.fixture(scope="module")
def server(files):
    args = ("--network", str(files["sg2"]), "--latents", str(files["projections"]), "--latents", str(files["one"]))
    with explore_server(*args) as (url, _):
        yield url


def _pixels(body: bytes) -> np.ndarray:
    return np.asarray(PIL.Image.open(io.BytesIO(body)))


def test_the_latent_files_listed_are_the_npz_files_given_and_in_the_folders_given_and_theirs(server, files):
    listed = fetch(f"{server}api/latents")[2].decode()
    folder = files["projections"]
    inside = ("changing.npz", "direction.npz", "hostile.npz", "target7/projected_w.npz", "two.npz")
    names = [*(str(folder / name) for name in inside), str(files["one"])]
    assert listed == "[" + ",".join(f'"{name}"' for name in names) + "]"


def test_a_projected_row_and_a_moved_w_are_the_files_of_the_commands_sent_with_them(server, files, tmp_path):
    two, direction = files["projections"] / "two.npz", files["projections"] / "direction.npz"
    cases = {
        "row": dict(latent=two, row=1),
        "row moved along a file": dict(latent=two, row=0, edit_file=direction, edit_amount=0.5, edit_layers="0-2"),
        "seed moved along a random direction": dict(seed=3, edit_seed=7, edit_amount=2, **{"class": 1}),
        "seed moved along a dimension": dict(seed=3, edit_dim=5, edit_amount=-1.5, **{"class": 1}),
        "mix of a free range": ("mix", dict(seed=3, source=9, mix_layers="2-4", **{"class": 1})),
    }
    bodies = {}
    for case, params in cases.items():
        endpoint, params = params if isinstance(params, tuple) else ("image", params)
        status, headers, body = get(server, endpoint, **params)
        assert status == 200, (case, body)
        assert generated(headers["x-ganforge-command"], tmp_path / case)[headers["x-ganforge-file"]] == body, case
        bodies[case] = headers["x-ganforge-file"], headers["x-ganforge-command"], body
    assert bodies["row"][0] == "proj01.png" and "--batch 1 --projected-w" in bodies["row"][1]
    assert (
        "--edit-file" in bodies["row moved along a file"][1]
        and "--edit-layers 0-2" in bodies["row moved along a file"][1]
    )
    assert bodies["seed moved along a random direction"][1].endswith(
        "--seeds 3 --class 1 --edit-seed 7 --edit-amount 2.0"
    )
    still = get(server, "image", seed=3, **{"class": 1})[2]
    assert len({still, *(body for _, _, body in bodies.values())}) == len(bodies) + 1  # every view is another image


def test_one_channel_is_enlarged_and_is_that_channel_of_the_strip(server):
    params = dict(seed=1, layer="b8.conv0", **{"class": 0})
    status, headers, zoomed = get(server, "layer", channel=2, **params)
    assert status == 200 and headers["x-ganforge-file"] == "b8.conv0-c2-seed0000001.png"
    assert headers["x-ganforge-image-file"] == "seed0000001.png" and "x-ganforge-command" not in headers
    strip = _pixels(get(server, "layer", channels=4, **params)[2])
    zoom = _pixels(zoomed)
    assert zoom.shape == (256, 256)  # an 8x8 map, each pixel a block of 32x32
    assert np.array_equal(zoom[::32, ::32], strip[:, 2 * 9 : 2 * 9 + 8])  # the third map of the strip
    big = _pixels(get(server, "layer", channel=0, **params | {"layer": "b16.conv1"})[2])
    assert big.shape == (256, 256) and np.array_equal(
        big[::16, ::16], _pixels(get(server, "layer", channels=1, **params | {"layer": "b16.conv1"})[2])
    )


def test_the_spectrum_is_of_the_images_file_pixels_centred_on_a_log_scale(server, files, tmp_path):
    two = files["projections"] / "two.npz"
    status, headers, body = get(server, "spectrum", latent=two, row=1)
    assert status == 200 and headers["x-ganforge-file"] == "spectrum-proj01.png"
    image = generated(headers["x-ganforge-image-command"], tmp_path)["proj01.png"]
    spectrum = _pixels(body)
    assert spectrum.shape == (256, 256)  # 16 px, each a block of 16
    expected = log_spectrum(_pixels(image))
    assert spectrum[8 * 16, 8 * 16] == 255 and spectrum[::16, ::16].argmax() == expected.argmax() == 8 * 16 + 8
    assert np.corrcoef(spectrum[::16, ::16].ravel(), expected.ravel())[0, 1] > 0.999


def test_the_log_spectrum_of_known_images():
    flat = np.zeros([4, 4, 3], np.uint8) + np.array([0, 30, 60], np.uint8)  # channels averaged: 30 everywhere
    spectrum = log_spectrum(flat)
    assert spectrum[2, 2] == pytest.approx(np.log1p(30 * 16)) and np.count_nonzero(spectrum) == 1  # DC, centred
    x = np.arange(8)
    wave = np.broadcast_to(100 + 50 * np.cos(2 * np.pi * x / 8), (8, 8))[:, :, None].round().astype(np.uint8)
    spectrum = log_spectrum(wave)  # one cycle across: peaks one step either side of the centre, 50 * 64 / 2 each
    assert spectrum[4, 3] == pytest.approx(np.log1p(1600), rel=1e-3)
    assert spectrum[4, 5] == pytest.approx(spectrum[4, 3], rel=1e-6)
    assert spectrum[4, 4] == pytest.approx(np.log1p(wave.sum()))


def test_a_latent_file_rewritten_is_not_answered_from_the_cache(server, files):
    changing = files["projections"] / "changing.npz"
    before = get(server, "image", latent=changing)[2]
    write_projected_w(changing, np.ones((1, NUM_WS, W_DIM)))
    after = get(server, "image", latent=changing)[2]
    assert PIL.Image.open(io.BytesIO(after)).size == (16, 16) and after != before


def test_the_render_time_is_sent_and_a_cached_answer_says_so(server):
    first = get(server, "image", seed=11, **{"class": 2})[1]["server-timing"]
    assert first.startswith("render;dur=") and float(first.split("=")[1]) > 0
    assert get(server, "image", seed=11, **{"class": 2})[1]["server-timing"] == 'cache;desc="from the cache"'


BAD = {
    "a path never listed": (dict(latent="/etc/passwd"), "latent=/etc/passwd: not a latent file of this server"),
    "a file beside the folder": ("secret", "not a latent file of this server"),
    "a hostile file": ("hostile", "hostile.npz: its zip directory is damaged"),
    "latent and seed": (dict(latent="two", seed=0), "seed and latent: an image comes from one of them"),
    "row without latent": (dict(seed=0, row=1, **{"class": 0}), "row: a row of a latent file; give latent too"),
    "row beyond": (dict(latent="two", row=2), "row 2:"),
    "truncated latent": (dict(latent="two", trunc=0.5), "--projected-w with --trunc"),
    "amount nan": (dict(seed=0, edit_seed=1, edit_amount="nan", **{"class": 0}), "--edit-amount nan: must be"),
    "amount far": (dict(seed=0, edit_seed=1, edit_amount=1e9, **{"class": 0}), "from -100 to 100"),
    "amount alone": (dict(seed=0, edit_amount=1, **{"class": 0}), "--edit-amount: only used with"),
    "dimension beyond": (dict(seed=0, edit_dim=8, edit_amount=1, **{"class": 0}), "have 8 dimensions, 0 to 7"),
    "layers beyond": (dict(seed=0, edit_dim=1, edit_amount=1, edit_layers="0-99", **{"class": 0}), "has ws 0 to 5"),
    "direction of two rows": (dict(seed=0, edit_file="two", edit_amount=1, **{"class": 0}), "holds 2 rows"),
    "a long amount": (dict(seed=0, edit_seed=1, edit_amount="1" * 5000, **{"class": 0}), "more than 4,096"),
    "channel beyond": (
        "layer",
        dict(seed=0, layer="b8.conv0", channel=8, **{"class": 0}),
        "channel=8: layer b8.conv0 has 8 channels",
    ),
    "channel negative": (
        "layer",
        dict(seed=0, layer="b8.conv0", channel=-1, **{"class": 0}),
        "channel=-1: must be a whole",
    ),
    "spectrum of no seed": ("spectrum", {}, "seed: missing"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_view_parameters_get_400_with_a_message_naming_them(server, files, case):
    endpoint, params, message = BAD[case] if len(BAD[case]) == 3 else ("image", *BAD[case])
    if isinstance(params, str):
        params = dict(latent=params)
    shorthand = {"two": files["projections"] / "two.npz", "hostile": files["projections"] / "hostile.npz",
                 "secret": files["secret"]}  # fmt: skip
    params = {k: shorthand.get(v, v) if isinstance(v, str) else v for k, v in params.items()}
    status, _, body = get(server, endpoint, **params)
    assert status == 400 and message in body.decode(), (case, body[:300])
    assert len(body) < 600 and b"Traceback" not in body
