"""TensorFlow-era pickles that ganforge refuses: settings it implements only in their default form (all listed at
once), variables missing, unexpected or misshapen, networks of other releases, globals outside the allow-list, and
streams the allow-list unpickler bounds (each guard one test that fails without it)."""

import os
import pickle

import numpy as np
import pytest
import tf_fixtures as tfx
import torch
from interop_fixtures import random_weights

from ganforge.errors import UserError
from ganforge.interop import load_network, read_network
from ganforge.interop.tf_pickle import read_tf_pickle
from ganforge.nets import Discriminator, Generator

ARCH = dict(resolution=8, z_dim=4, w_dim=4, channel_base=32, channel_max=4, mapping_layers=1)


class Call:
    """Pickles as `function(*args)`, then BUILD with `state` when given."""

    def __init__(self, function, *args, state=None):
        self.function, self.args, self.state = function, args, state

    def __reduce__(self):
        return (self.function, self.args) if self.state is None else (self.function, self.args, self.state)


@pytest.fixture(scope="module")
def nets():
    return random_weights(Generator(**ARCH), seed=1), random_weights(Discriminator(**ARCH), seed=2)


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "payload-ran"
    yield path
    assert not path.exists(), "a payload from the file was executed"


def problems(tmp_path, G, D=None, Gs=None, which="G_ema", protocol=4) -> list[str]:
    """The problems a UserError lists for reading network `which` of the pickle (G, D, Gs), without the path."""
    path = tmp_path / "network.pkl"
    path.write_bytes(tfx.tf_pickle(G, D if D is not None else G, Gs if Gs is not None else G, protocol))
    with pytest.raises(UserError) as err:
        read_network(path, which)
    return [p.removeprefix(f"{path}: ") for p in err.value.problems]


def changed(G, **kwargs_changes) -> tfx.Network:
    return tfx.tf_generator(G, kwargs=tfx.generator_kwargs(G, "ada") | kwargs_changes)


def test_unsupported_generator_settings_are_listed_together(nets, tmp_path):
    G = changed(nets[0], architecture="dense", resample_kernel=[1, 1], mapping_lrmul=0.1, nonlinearity="relu",
                use_noise=False, fmap_decay=0.5, label_dropout=0.1)  # fmt: skip
    found = problems(tmp_path, G)
    assert sorted(found) == sorted([
        "label_dropout=0.1: a setting ganforge's StyleGAN2 does not have",  # in all three networks' kwargs: once
        "mapping_lrmul=0.1: ganforge implements only 0.01",
        "fmap_decay=0.5: ganforge implements only 1",
        "nonlinearity='relu': ganforge implements only 'lrelu'",
        "resample_kernel=[1, 1]: ganforge implements only [1, 3, 3, 1]",
        "architecture='dense': ganforge implements only 'orig' or 'skip' or 'resnet'",
        "use_noise=False: ganforge implements only True",
    ])  # fmt: skip


def test_unsupported_discriminator_settings_are_listed_together(nets, tmp_path):
    D = nets[1]
    changes = dict(
        architecture="dense", mbstd_num_features=2, use_spectral_norm=True, mbstd_group_size=None, label_size=3
    )
    kwargs = tfx.discriminator_kwargs(D, "ada") | changes
    found = problems(tmp_path, tfx.tf_generator(nets[0]), tfx.tf_discriminator(D, kwargs=kwargs), which="D")
    assert found == [
        "architecture='dense': ganforge implements only 'orig' or 'skip' or 'resnet'",
        "mbstd_num_features=2: ganforge implements only 1",
        "use_spectral_norm=True: ganforge implements only False",
        "mbstd_group_size=None (the whole minibatch) is not supported",
        "a conditional discriminator with mapping_layers=0, mapping_lrmul=0.1: ganforge embeds the label with 8 "
        "layers at 0.01, as the PyTorch StyleGAN2",
    ]


def test_missing_unexpected_misshapen_and_integer_variables_are_listed_in_tf_names(nets, tmp_path):
    G = tfx.tf_generator(nets[0])
    synthesis = G._state["components"]["synthesis"]._state["variables"]
    named = dict(synthesis)
    named.pop("8x8/Conv1/bias")
    named["8x8/Skip/weight"] = tfx.Array(np.zeros((1, 1, 4, 4)))
    named["8x8/ToRGB/weight"] = tfx.Array(np.zeros((1, 1, 3, 4)))
    named["4x4/Conv/noise_strength"] = tfx.Array(np.zeros(()))
    named["4x4/Conv/noise_strength"].value = np.zeros((), np.int64)
    synthesis[:] = list(named.items())
    assert problems(tmp_path, G) == [
        "G_ema: architecture mismatch, missing variable synthesis/8x8/Conv1/bias",
        "G_ema: architecture mismatch, unexpected variable synthesis/8x8/Skip/weight",
        "G_ema: architecture mismatch, variable synthesis/4x4/Conv/noise_strength holds int64 values, not "
        "floating-point numbers",
        "G_ema: architecture mismatch, variable synthesis/8x8/ToRGB/weight has shape [1, 1, 3, 4], the architecture "
        "needs [1, 1, 4, 3]",
    ]


def test_a_conditional_generator_of_the_original_release_is_refused(tmp_path):
    G = tfx.tf_generator(random_weights(Generator(**ARCH, c_dim=2), seed=3), "stylegan2")
    mapping = G._state["components"]["mapping"]._state["variables"]
    mapping[:] = [(n, v) for n, v in mapping if not n.startswith("LabelEmbed")]
    mapping.append(("LabelConcat/weight", tfx.Array(np.zeros((2, 4)))))
    (found,) = problems(tmp_path, G)
    assert "a conditional generator of the original TensorFlow StyleGAN2 (mapping/LabelConcat/weight)" in found


def test_networks_of_other_releases_and_layouts_are_refused(nets, tmp_path):
    G = tfx.tf_generator(nets[0])
    G._state["components"]["synthesis"]._state["build_func_name"] = "G_synthesis_stylegan_revised"
    (found,) = problems(tmp_path, G)
    assert found.startswith("G_ema/synthesis is built by G_synthesis_stylegan_revised, not StyleGAN2's")
    assert "not StyleGAN 1's nor configs A-D" in found
    style = tfx.network("Gs", "G_style", {}, {}, version=3)  # StyleGAN 1's networks are version 3
    assert problems(tmp_path, style)[0].startswith("G_ema is a TensorFlow network of version 3; ganforge reads")
    G = tfx.tf_generator(nets[0])
    found = problems(tmp_path, G, tfx.tf_generator(nets[0]), which="D")
    assert found == ["D has components synthesis, mapping; StyleGAN2's has none"]
    del G._state["components"]["synthesis"]
    assert problems(tmp_path, G) == ["G_ema has components mapping; StyleGAN2's has mapping, synthesis"]
    G = tfx.tf_generator(nets[0])
    G._state["extra"] = 1
    assert problems(tmp_path, G) == ["G_ema's state has an unknown field extra; not a network dnnlib wrote"]
    del G._state["extra"], G._state["variables"]
    assert problems(tmp_path, G) == ["G_ema's state has no variables; not a network dnnlib wrote"]


def test_a_pickle_that_is_not_a_tuple_of_three_networks_is_refused(nets, tmp_path):
    path = tmp_path / "network.pkl"
    with tfx.official_names():
        path.write_bytes(pickle.dumps(tfx.tf_generator(nets[0])))
    with pytest.raises(UserError, match="a TensorFlow pickle, but not a StyleGAN2 network pickle .a tuple of G, D"):
        load_network(path)


def test_globals_outside_the_allow_list_are_refused_by_name(nets, tmp_path, marker):
    payload = Call(os.system, f"touch {marker}")
    G = changed(nets[0], fmap_max=payload)
    assert (
        "refused: the pickle asks for posix.system, which is not part of a TensorFlow StyleGAN2"
        in (problems(tmp_path, G)[0])
    )
    G = tfx.tf_generator(nets[0])
    G._state["variables"].append(("dlatent_avg2", Call(torch._utils._rebuild_tensor_v2, None)))
    assert "asks for torch._utils._rebuild_tensor_v2" in problems(tmp_path, G)[0]  # a PyTorch pickle's, not a TF one's
    G = tfx.tf_generator(nets[0])
    G._state["build_module_src"] = payload  # the source is never run; an object in its place is not even made
    assert "asks for posix.system" in problems(tmp_path, G)[0]


def test_a_truncated_file_is_refused(nets, tmp_path):
    path = tmp_path / "network.pkl"
    data = tfx.tf_pickle(tfx.tf_generator(nets[0]), tfx.tf_discriminator(nets[1]), tfx.tf_generator(nets[0]))
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="not a readable TensorFlow network pickle"):
        load_network(path)


# --- the allow-list unpickler's guards ----------------------------------------------------------------------------


def refused(tmp_path, data: bytes, match: str) -> None:
    path = tmp_path / "network.pkl"
    path.write_bytes(data)
    with pytest.raises(UserError, match=match):
        read_tf_pickle(path)


def pickled(obj) -> bytes:
    with tfx.official_names():
        return pickle.dumps(obj, protocol=4)


def array(state) -> Call:
    return Call(tfx._reconstruct, np.ndarray, (0,), b"b", state=state)


def test_build_acts_only_on_networks_arrays_and_dtypes_and_once(tmp_path):
    refused(tmp_path, b"\x80\x02cdnnlib.tflib.network\nNetwork\n)\x81}b}b.", "network given a state twice")
    refused(tmp_path, b"\x80\x02}}b.", r"sets the state of a dict \(BUILD\), which a TensorFlow network pickle never")
    refused(tmp_path, b"\x80\x02cdnnlib.tflib.network\nNetwork\nK\x01\x85\x81.", "network made with arguments")
    refused(tmp_path, pickled(Call(tfx._reconstruct, np.ndarray, (1,), b"b")), "reconstruction with other arguments")


def test_an_array_holds_exactly_the_bytes_of_its_shape(tmp_path):
    refused(tmp_path, pickled(array((1, (2, 3), np.dtype("f4"), False, b"\x00" * 20))),
            r"a numpy array of shape \(2, 3\) over 20 bytes")  # fmt: skip
    refused(tmp_path, pickled(array((1, (2,), np.dtype("O"), False, [None, None]))), "not a plain numeric type")
    refused(tmp_path, pickled(array((1, (2,), np.dtype(">f4"), False, b"\x00" * 8))), "another byte order")


def test_bytes_shared_through_the_memo_make_no_more_array_than_the_file_holds(tmp_path):
    data = b"\x00" * 4000
    arrays = [array((1, (1000,), np.dtype("f4"), False, data)) for _ in range(20)]  # the same bytes object 20 times
    refused(tmp_path, pickled(arrays), r"arrays of 8000 bytes in all from a file of 4\d\d\d")


def test_every_variable_holds_an_array_of_its_own(nets, tmp_path):
    G = tfx.tf_generator(nets[0])
    shared = tfx.Array(np.zeros(4))
    G._state["variables"][:] = [("dlatent_avg", shared), ("lod", shared)]
    assert problems(tmp_path, G) == ["G_ema's variable lod is listed twice or shares another one's array"]


def test_components_nest_one_deep(nets, tmp_path):
    G = tfx.tf_generator(nets[0])
    mapping = G._state["components"]["mapping"]
    mapping._state["components"] = {"inner": tfx.tf_generator(nets[0])}
    assert problems(tmp_path, G) == ["G_ema/mapping has components of its own; StyleGAN2's networks nest one deep"]


def test_values_from_the_file_are_shown_bounded(nets, tmp_path):
    shared = [0]
    for _ in range(60):  # repr() of it would be 2^60 elements long
        shared = [shared, shared]
    found = problems(tmp_path, changed(nets[0], fmap_max=shared, fmap_decay=10**5000))
    assert found == ["fmap_max=<a list of 2 items>: not a number, string or short list",
                     "fmap_decay=<an integer of 16610 bits>: ganforge implements only 1"]  # fmt: skip


def test_settings_are_read_from_the_network_that_takes_them(nets, tmp_path):
    """TensorFlow builds each component from its own static_kwargs: a setting G_main passed on is checked there."""
    G = changed(nets[0], architecture="resnet")
    G._state["components"]["synthesis"]._state["static_kwargs"]["architecture"] = "skip"
    path = tmp_path / "network.pkl"
    path.write_bytes(tfx.tf_pickle(G, G, G))
    assert load_network(path)[0].config == nets[0].config
    G = tfx.tf_generator(nets[0])
    G._state["components"]["synthesis"]._state["static_kwargs"]["architecture"] = "dense"
    assert problems(tmp_path, G) == ["architecture='dense': ganforge implements only 'orig' or 'skip' or 'resnet'"]


def test_an_architecture_larger_than_the_file_is_refused_before_its_variables_are_compared(nets, tmp_path):
    G = changed(nets[0], resolution=1024, fmap_max=1024, fmap_base=2**19)
    (found,) = problems(tmp_path, G)
    assert found.startswith("its architecture has ") and "parameters, more than a file of" in found
