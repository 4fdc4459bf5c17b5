"""Deployable generators: `ganforge export` writes ONNX (run with onnxruntime) or torch.export (`.pt2`) models in
fp32, fp16 or int8, each checked against the eager generator by pixels and, for reduced precision, by FID/KID,
with a JSON card beside it:

    from ganforge.export import ExportOptions, export_network
    card = export_network(ExportOptions(network=Path("G.safetensors"), out=Path("G.onnx"), precision="int8"))

Importing this package is cheap; torch and the exporters are imported when `export_network` runs.
"""

from ganforge.export.options import ExportOptions


def export_network(options: ExportOptions) -> dict:
    """Export, check and write what `options` asks for; returns the card written next to the model."""
    from ganforge.export.run import export_network as run

    return run(options)


__all__ = ["ExportOptions", "export_network"]
