"""torch.export programs (`.pt2`): an ExportedProgram saved with `torch.export.save`. The file holds the graph of
ATen operations and the weights, no Python code, so `torch.export.load(path).module()` runs it where ganforge is
not installed.
"""

from pathlib import Path

import torch

from ganforge.export.quiet import quiet_exporter
from ganforge.export.wrapper import DeployableGenerator


def export_pt2(module: DeployableGenerator, path: Path, example: tuple) -> None:
    """Write `module` as an ExportedProgram to `path`."""
    with quiet_exporter(), torch.no_grad():
        program = torch.export.export(module, example, dynamic_shapes=module.dynamic_shapes(len(example)))
        torch.export.save(program, str(path))


class Pt2Runner:
    """Loads a `.pt2` file as a user of it would (torch.export.load) and runs it: tensors in, a CPU tensor out."""

    def __init__(self, path: Path):
        self.module = torch.export.load(str(path)).module()
        self.runtime = f"torch {torch.__version__} (torch.export.load, eager)"

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.module(*inputs).cpu()
