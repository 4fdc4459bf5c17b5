"""`ganforge explore`'s endpoints, against the real server: each image is the file of the `ganforge generate` command
sent with it (and of a command written by hand), bad parameters are refused with 400 and one message, the request
limits hold, and a server on a non-loopback address wants its token."""

import io
import socket
import urllib.parse

import numpy as np
import PIL.Image
import pytest
from explore_helpers import explore_server, fetch, generated, get, tiny_networks


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    return tiny_networks(tmp_path_factory.mktemp("explore-nets"))


@pytest.fixture(scope="module")
def server(nets):
    with explore_server("--network", str(nets["sg2"]), "--network", str(nets["sg3"])) as (url, _):
        yield url


CASES = {
    "seed": ("image", dict(seed=3, trunc=0.5, trunc_cutoff=2, noise_mode="random", **{"class": 0})),
    "class": ("image", dict(seed=3, **{"class": 2})),
    "label": ("image", dict(seed=4, label="0.5,0,1")),
    "grid page": ("grid", dict(page=1, trunc=0.7, **{"class": 0})),
    "style mix": ("mix", dict(seed=5, source=9, mix_layers="0-3", **{"class": 1})),
    "interpolation": ("interp", dict(seeds="0,1,2", interp=3, **{"class": 0})),
    "stylegan3 moved": ("image", dict(net=1, seed=2, translate="0.25,-0.1", rotate=30, trunc=0.8)),
}


@pytest.mark.parametrize("case", CASES)
def test_each_image_is_the_file_of_the_generate_command_sent_with_it(server, case, tmp_path):
    endpoint, params = CASES[case]
    status, headers, body = get(server, endpoint, **params)
    assert status == 200, body
    files = generated(headers["x-ganforge-command"], tmp_path / "out")
    assert files[headers["x-ganforge-file"]] == body
    assert (
        headers["content-type"]
        == {"png": "image/png", "webp": "image/webp", "gif": "image/gif"}[headers["x-ganforge-file"].rsplit(".", 1)[1]]
    )


def test_an_image_is_what_a_generate_command_written_by_hand_makes(server, nets, tmp_path):
    """The command sent with an image could be wrong in the same way as the image: here the command is the test's."""
    status, _, body = get(server, "image", seed=3, trunc=0.5, **{"class": 2})
    assert status == 200
    command = f"ganforge generate --network {nets['sg2']} --outdir out --device cpu --seeds 3 --trunc 0.5 --class 2"
    assert generated(command, tmp_path / "a")["seed0000003.png"] == body
    _, _, mixed = get(server, "mix", seed=5, source=9, mix_layers="0-3", **{"class": 1})
    command = (
        f"ganforge generate --network {nets['sg2']} --outdir out --device cpu --style-mix 5 9 --mix-layers 0-3 "
        "--mix-cells --class 1"
    )
    assert generated(command, tmp_path / "b")["mix0000005-0000009.png"] == mixed
    assert mixed != get(server, "image", seed=5, **{"class": 1})[2]


def test_feature_maps_show_the_first_channels_of_the_chosen_layer_side_by_side(server, tmp_path):
    status, headers, body = get(server, "layer", seed=1, layer="b8.conv0", channels=4, **{"class": 0})
    assert status == 200 and headers["x-ganforge-file"] == "b8.conv0-seed0000001.png"
    # No command writes feature maps (the page said `generate --seeds 1`, which writes seed0000001.png): the command
    # sent is the one that writes the image they come from, named apart.
    assert "x-ganforge-command" not in headers and headers["x-ganforge-image-file"] == "seed0000001.png"
    image = get(server, "image", seed=1, **{"class": 0})[2]
    assert generated(headers["x-ganforge-image-command"], tmp_path / "out")["seed0000001.png"] == image
    maps = np.asarray(PIL.Image.open(io.BytesIO(body)))
    assert maps.shape == (8, 4 * 8 + 3)  # four 8x8 maps, a black pixel between two
    assert maps.max() == 255 and maps.min() == 0  # each map stretched to the full grey range
    other = get(server, "layer", seed=1, layer="b16.conv1", channels=4, **{"class": 0})[2]
    assert np.asarray(PIL.Image.open(io.BytesIO(other))).shape == (16, 4 * 16 + 3)
    networks = fetch(f"{server}api/networks")[2].decode()
    assert '"layers":["b4.conv1","b8.conv0"' in networks and '"stylegan3":true' in networks


BAD = {
    "trunc nan": ("image", dict(seed=0, trunc="nan"), "--trunc nan: must be a truncation psi"),
    "trunc far": ("image", dict(seed=0, trunc=5), "must be a truncation psi from -2 to 2"),
    "seed negative": ("image", dict(seed=-1), "seed=-1: a seed is a whole number from 0 to 4294967295"),
    "seed huge": ("image", dict(seed="9" * 5000), "seed: 5,000 characters, more than 4,096"),
    "seed missing": ("image", {}, "seed: missing"),
    "no such network": ("image", dict(seed=0, net=7), "net=7: there are 2 network(s)"),
    "a file path": ("image", dict(seed=0, network="/etc/passwd"), "network: not a parameter of /api/image"),
    "a path as a layer": ("layer", dict(seed=0, layer="../../etc/passwd", **{"class": 0}), "not a layer of network 0"),
    "class too big": ("image", dict(seed=0, **{"class": 3}), "--class 3"),
    "no class for a conditional network": ("image", dict(seed=0), "--class"),
    "label of the wrong length": ("image", dict(seed=0, label="1,0"), "--label"),
    "translate of stylegan2": ("image", dict(seed=0, translate="0.1,0", **{"class": 0}), "StyleGAN2"),
    "rotate inf": ("image", dict(net=1, seed=0, rotate="inf"), "--rotate inf"),
    "bad noise mode": ("image", dict(seed=0, noise_mode="bogus"), "noise-mode=bogus: one of const, random, none"),
    "mix layers beyond": ("mix", dict(seed=0, source=1, mix_layers="0-99", **{"class": 0}), "--mix-layers"),
    "a million mix layers": (
        "mix",
        dict(seed=0, source=1, mix_layers="0-999999", **{"class": 0}),
        "not 6, 7, 8 and 999,991 more",
    ),  # fmt: skip
    "grid too big": ("grid", dict(grid="100x100"), "at most 64 cells"),
    "page beyond the seeds": ("grid", dict(page=10**9), "its seeds pass 4294967295"),
    "page of 11 digits": ("grid", dict(page=10**10), "page=10000000000: must be a whole number of at most 10 digits"),
    "too many frames": ("interp", dict(seeds="0,1", interp=1000, **{"class": 0}), "more than 480"),
    "too many seeds": ("interp", dict(seeds="0-99", interp=1, **{"class": 0}), "at most 16"),
    "too many channels": ("layer", dict(seed=0, layer="b8.conv0", channels=99), "channels=99"),
    "not a number": ("image", dict(seed=0, rotate="left"), "rotate=left: must be a number"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_parameters_get_400_with_a_message_naming_them(server, case):
    endpoint, params, message = BAD[case]
    status, _, body = get(server, endpoint, **params)
    assert status == 400, (case, body[:200])
    assert message in body.decode(), body.decode()
    assert len(body) < 600


def test_a_parameter_given_twice_and_an_unknown_endpoint_are_refused(server):
    status, _, body = fetch(f"{server}api/image?seed=1&seed=2")
    assert status == 400 and b"seed: given twice" in body
    assert fetch(f"{server}api/files?path=/etc/passwd")[0] == 404
    assert fetch(f"{server}static/../../etc/passwd")[0] == 404


def test_a_request_naming_another_host_is_refused(server):
    """DNS rebinding: a page of evil.example, its name pointed at 127.0.0.1, sends `Host: evil.example`."""
    port = urllib.parse.urlsplit(server).port
    for path in ("", "explore.js", "api/networks", "api/image?seed=0&class=0"):
        status, _, body = fetch(server + path, headers={"Host": f"evil.example:{port}"})
        assert status == 403 and b"'evil.example:" in body and b"--allowed-host" in body, (path, body)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost:8000", "[::1]:8000"):  # 8000: an SSH tunnel
        assert fetch(server + "api/networks", headers={"Host": host})[0] == 200, host
    for host in ("evil.example", "127.0.0.1.evil.example", "evil.example@127.0.0.1", "localhost:80:80"):
        assert fetch(server + "api/networks", headers={"Host": host})[0] == 403, host
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:  # HTTP/1.0 sends no Host
        client.sendall(b"GET /api/networks HTTP/1.0\r\n\r\n")
        assert client.recv(4096).startswith(b"HTTP/1.1 403 ")


def test_a_server_on_another_address_wants_its_token_and_a_name_it_serves(nets):
    args = ("--network", str(nets["sg3"]), "--host", "0.0.0.0", "--allowed-host", "Explore.Example")
    with explore_server(*args) as (url, proc):
        parts = urllib.parse.urlsplit(url)
        token = urllib.parse.parse_qs(parts.query)["token"][0]
        assert len(token) >= 32
        base = f"http://127.0.0.1:{parts.port}/"
        for path in ("", "api/networks", "api/image?seed=0", f"api/image?seed=0&token={token[:-1]}x", "explore.js"):
            assert fetch(base + path)[0] == 403, path
        status, headers, _ = fetch(f"{base}?token={token}")
        assert status == 200
        cookie = headers["set-cookie"].split(";")[0]
        assert cookie == f"ganforge-explore-token-{parts.port}={token}" and "HttpOnly" in headers["set-cookie"]
        assert "SameSite=Strict" in headers["set-cookie"]
        # the page's own files and requests carry the cookie; a script may send the token as a bearer header
        assert fetch(base + "explore.js", headers={"Cookie": cookie})[0] == 200
        assert fetch(base + "api/image?seed=0", headers={"Cookie": cookie + "x"})[0] == 403
        assert fetch(base + "api/networks", headers={"Authorization": f"Bearer {token}"})[0] == 200
        assert fetch(f"{base}api/image?seed=0&token={token}")[0] == 200
        # any address of this machine names it, and --allowed-host names; no other name does, token or not
        for host, status in (("explore.example:443", 200), ("192.0.2.7", 200), ("evil.example", 403)):
            assert fetch(f"{base}?token={token}", headers={"Host": host})[0] == status, host
    assert "warning: --host 0.0.0.0: reachable from other machines" in proc.stderr_text
    summary = [line for line in proc.stderr_text.splitlines() if line.startswith("ganforge explore, the last")]
    assert len(summary) == 1, proc.stderr_text
    assert "6 requests refused without the token" in summary[0]
    assert "1 requests refused for naming another host" in summary[0] and "'evil.example'" in summary[0]
