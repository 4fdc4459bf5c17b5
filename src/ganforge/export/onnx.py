"""ONNX files through PyTorch's dynamo-based exporter (torch.export, then translation to ONNX), run with onnxruntime.

Needs the `export` extra (onnx, onnxscript, onnxruntime); `require_extra` names it when a module is missing.
"""

import ast
import importlib
from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.export.quiet import quiet_exporter
from ganforge.export.wrapper import DeployableGenerator

OPSET = 18  # ONNX opset: 18 is the lowest the dynamo exporter targets natively, and what current runtimes all run
EXTRA_MODULES = ("onnx", "onnxscript", "onnxruntime")


def require_extra() -> None:
    """UserError in one line when the `export` extra is not installed."""
    missing = [name for name in EXTRA_MODULES if not _importable(name)]
    if missing:
        raise UserError(f"--format onnx needs {', '.join(missing)}: pip install 'ganforge[export]'")


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def export_onnx(module: DeployableGenerator, path: Path, example: tuple) -> None:
    """Write `module` as an ONNX model (opset OPSET) to `path`."""
    names = [spec.name for spec in module.inputs()]
    with quiet_exporter(), torch.no_grad():
        program = torch.onnx.export(
            module,
            example,
            dynamo=True,
            opset_version=OPSET,
            input_names=names,
            output_names=[module.output().name],
            verbose=False,
            dynamic_shapes=module.dynamic_shapes(len(example)),
        )
        program.save(str(path))


def convert_fp16(src: Path, dst: Path, keep_float: list[str]) -> None:
    """Weights and activations of every node in half precision, except the nodes in `keep_float`; inputs and
    outputs keep their types (casts at the boundary)."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True, node_block_list=keep_float)
    onnx.save(model, str(dst))


def scoped_nodes(path: Path, prefix: str) -> list[str]:
    """Names of the nodes made by module `prefix` or its children (from the exporter's name-scope metadata)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return [node.name for node in graph.node if any(s == prefix or s.startswith(prefix + ".") for s in scopes(node))]


def scopes(node) -> list[str]:
    """The module paths a node came from, outermost first (the exporter records them as a Python list literal)."""
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            return ast.literal_eval(prop.value)[:-1]  # the last entry names the op, not a module
    return []


def opset_of(path: Path) -> int:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


def providers() -> list:
    """onnxruntime's CUDA provider when it has one and a GPU is there (IEEE fp32: TF32 would blur the fp32 check),
    then always the CPU provider."""
    import onnxruntime

    cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers() and torch.cuda.is_available()
    return [("CUDAExecutionProvider", {"use_tf32": "0"})] * cuda + ["CPUExecutionProvider"]


class OnnxRunner:
    """Runs an ONNX file with onnxruntime like the eager module: tensors in, a CPU tensor out."""

    def __init__(self, path: Path, input_names: list[str]):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: the session's notes on unused initializers are not the user's
        self.session = onnxruntime.InferenceSession(str(path), options, providers=providers())
        self.input_names = input_names
        self.runtime = f"onnxruntime {onnxruntime.__version__} {self.session.get_providers()[0]}"

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        feeds = {name: x.cpu().numpy() for name, x in zip(self.input_names, inputs, strict=True)}
        return torch.from_numpy(self.session.run(None, feeds)[0])
