"""`ganforge export --format pt2`: a torch.export program that a fresh Python process loads and runs with
torch.export.load alone (ganforge is refused an import there), giving the eager generator's images; StyleGAN3 too."""

import json
import subprocess
import sys

import numpy as np
import torch
from export_helpers import export, tiny_snapshot

from ganforge.snapshot import load_snapshot

# Runs in a fresh interpreter: ganforge cannot be imported (a meta-path finder refuses it), the program is loaded
# with torch.export.load and run on the saved inputs; prints the max abs difference and any ganforge module seen.
FRESH_PROCESS = """
import sys, numpy as np, torch
class NoGanforge:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "ganforge":
            raise ImportError("ganforge is not installed here")
sys.meta_path.insert(0, NoGanforge())
program, inputs, expected = sys.argv[1], np.load(sys.argv[2]), np.load(sys.argv[3])
module = torch.export.load(program).module()
with torch.no_grad():
    out = module(*[torch.from_numpy(inputs[k]) for k in sorted(inputs.files)]).numpy()
print(np.abs(out.astype(np.float64) - expected).max(), [m for m in sys.modules if m.startswith("ganforge")])
"""


def run_fresh(program, inputs: dict, expected: np.ndarray, tmp_path) -> str:
    np.savez(tmp_path / "inputs.npz", **inputs)
    np.save(tmp_path / "expected.npy", expected)
    args = [sys.executable, "-c", FRESH_PROCESS, program, tmp_path / "inputs.npz", tmp_path / "expected.npy"]
    done = subprocess.run(list(map(str, args)), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pt2_loads_and_runs_without_ganforge(tmp_path):
    """A conditional network (z and c inputs); the unconditional StyleGAN3 export below has z alone. At 8 px: a
    smaller program is quicker to trace, and to load in both processes."""
    snapshot = tiny_snapshot(tmp_path / "G.safetensors", c_dim=3, resolution=8)
    out = tmp_path / "G.pt2"
    result = export("--network", snapshot, "--out", out, "--format", "pt2", "--trunc", "0.7", "--check", "5")
    assert result.exit_code == 0, result.output
    stages = ["export: torch.export trace", "export: loading the .pt2 program as a user would", "export: check on 5 "]
    started = [line for line in result.stdout.splitlines() if line.endswith(": started")]
    assert len(started) == len(stages) and all(line.startswith(s) for line, s in zip(started, stages, strict=True))
    card = json.loads((tmp_path / "G.pt2.json").read_text())
    assert card["format"] == "pt2" and "opset" not in card and card["check"]["max_abs_diff"] == 0
    assert [spec["name"] for spec in card["inputs"]] == ["z", "c"]
    G, _ = load_snapshot(snapshot)
    z, c = torch.randn(3, 8), torch.eye(3)[[0, 2, 1]]
    with torch.no_grad():
        expected = G(z, c, psi=0.7, noise_mode="const").numpy().astype(np.float64)
    assert run_fresh(out, {"0_z": z.numpy(), "1_c": c.numpy()}, expected, tmp_path) == "0.0 []"


def test_stylegan3_exports_to_pt2_and_has_no_noise_inputs(tmp_path):
    snapshot = tiny_snapshot(tmp_path / "G3.safetensors", stylegan3=True)
    result = export(
        "--network", snapshot, "--out", tmp_path / "G3.pt2", "--format", "pt2", "--batch", "2", "--check", "7"
    )
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "G3.pt2.json").read_text())
    assert card["source"]["architecture"] == "stylegan3" and card["batch"] == 2
    assert card["inputs"][0]["shape"] == [2, 8] and card["check"]["batch_sizes"] == [2] * 4
    result = export("--network", snapshot, "--out", tmp_path / "N.pt2", "--format", "pt2", "--noise", "input")
    assert result.exit_code == 2
    assert result.output == "error: --noise input: a StyleGAN3 generator has no noise inputs; use --noise const\n"
