"""Pretrained StyleGAN2 models in: NVlabs pickles (PyTorch and TensorFlow-era) and rosinality checkpoints, read
without executing the file.

from ganforge.interop import load_network, import_network
G, meta = load_network("ffhq.pkl")                      # or a TF-era .pkl, a snapshot, a rosinality .pt, a run folder
import_network("ffhq.pkl", "ffhq.safetensors")          # G_ema -> a ganforge snapshot

The names are loaded on first use: `ganforge --help` imports `ganforge.interop.options` (and so this file), and must
not pay for importing torch.
"""

from ganforge import names_on_first_use

_HOMES = {
    "import_network": "ganforge.interop.network",
    "load_network": "ganforge.interop.sources",
    "read_network": "ganforge.interop.network",
}

__all__ = ["import_network", "load_network", "read_network"]


__getattr__ = names_on_first_use(__name__, _HOMES)
