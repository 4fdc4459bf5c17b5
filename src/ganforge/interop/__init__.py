"""Pretrained StyleGAN2 models in: NVlabs pickles (PyTorch and TensorFlow-era) and rosinality checkpoints, read
without executing the file.

from ganforge.interop import load_network, import_network
G, meta = load_network("ffhq.pkl")                      # or a TF-era .pkl, a snapshot, a rosinality .pt, a run folder
import_network("ffhq.pkl", "ffhq.safetensors")          # G_ema -> a ganforge snapshot
"""

from ganforge.interop.network import import_network, read_network
from ganforge.interop.sources import load_network

__all__ = ["import_network", "load_network", "read_network"]
