"""Peak throughput of common NVIDIA GPUs, to put measured figures in context.

Dense (no structured sparsity) tensor-core figures at boost clock, fp16/bf16 with fp32 accumulation (what torch's
matmul uses), and peak memory bandwidth, each from the vendor document named in `source`. NVIDIA datasheets quote
tensor-core figures "with sparsity"; those are halved here.
"""

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Peak:
    """TFLOP/s per precision (None where the GPU has no such unit) and memory bandwidth in GB/s."""

    model: str
    fp32: float
    tf32: float | None
    bf16: float | None
    fp16: float
    bandwidth_gbs: float
    source: str


_H100 = "NVIDIA H100 Tensor Core GPU datasheet"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet"
_V100 = "NVIDIA V100 Tensor Core GPU datasheet"

# First pattern that matches the device name wins, so the more specific variants come first.
PEAKS: tuple[tuple[str, Peak], ...] = (
    (r"\bH200\b", Peak("H200 SXM", 67.0, 494.7, 989.4, 989.4, 4800, "NVIDIA H200 Tensor Core GPU datasheet")),
    (r"\bH100\b.*\bNVL\b", Peak("H100 NVL", 60.0, 417.5, 835.5, 835.5, 3900, _H100)),
    (r"\bH100\b.*\bPCIe\b", Peak("H100 PCIe", 51.0, 378.0, 756.0, 756.0, 2000, _H100)),
    (r"\bH100\b", Peak("H100 SXM", 67.0, 494.7, 989.4, 989.4, 3350, _H100)),
    (r"\bA100\b.*80GB.*PCIe", Peak("A100 80GB PCIe", 19.5, 156.0, 312.0, 312.0, 1935, _A100)),
    (r"\bA100\b.*80GB", Peak("A100 80GB SXM4", 19.5, 156.0, 312.0, 312.0, 2039, _A100)),
    (r"\bA100\b", Peak("A100 40GB", 19.5, 156.0, 312.0, 312.0, 1555, _A100)),
    (r"\bV100\b.*PCIE", Peak("V100 PCIe", 14.0, None, None, 112.0, 900, _V100)),
    (r"\bV100\b", Peak("V100 SXM2", 15.7, None, None, 125.0, 900, _V100)),
    (r"\bL40S\b", Peak("L40S", 91.6, 183.0, 362.0, 362.0, 864, "NVIDIA L40S GPU datasheet")),
    (r"\bL4\b", Peak("L4", 30.3, 60.0, 121.0, 121.0, 300, "NVIDIA L4 Tensor Core GPU datasheet")),
    (r"\bA10\b", Peak("A10", 31.2, 62.5, 125.0, 125.0, 600, "NVIDIA A10 Tensor Core GPU datasheet")),
    (r"\bT4\b", Peak("T4", 8.1, None, None, 65.0, 320, "NVIDIA T4 Tensor Core GPU datasheet")),
    (
        r"\bRTX 4090\b",
        Peak("GeForce RTX 4090", 82.6, 82.6, 165.2, 165.2, 1008, "NVIDIA Ada Lovelace GPU architecture whitepaper"),
    ),
    (
        r"\bRTX 3090\b",
        Peak("GeForce RTX 3090", 35.6, 35.6, 71.0, 71.0, 936, "NVIDIA Ampere GA102 GPU architecture whitepaper"),
    ),
)


def lookup(device_name: str) -> Peak | None:
    """The peak figures for a device name as CUDA reports it ('NVIDIA H100 80GB HBM3'), or None when unknown."""
    for pattern, peak in PEAKS:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return peak
    return None
