#!/usr/bin/env bash
# Builds the project's Dockerfile and runs ganforge inside the image, as a user would after `docker build`:
# `ganforge --version`, `ganforge doctor --json --quick`, the Inception weights of the `fid` extra, and a tiny training
# on a dataset made inside the image, written to a host folder mounted at /data.
#
#   sudo benchmarks/container_check.sh     # needs root, and podman, buildah and debootstrap (Debian's packages)
#
# No registry is needed. The base image is a CPU stand-in for PyTorch's CUDA runtime image
# (benchmarks/container_base.Containerfile): a Debian root filesystem made by debootstrap, with the CPU build of torch
# at the Makefile's TORCH_SPEC. PyPI's x86_64 torch is a CUDA build of several GB, so the wheel is the CPU one that
# pip on this machine finds (`pip download torch==X+cpu`: a local wheel folder, or an index such as
# https://download.pytorch.org/whl/cpu given in PIP_EXTRA_INDEX_URL); it is copied into the base image's build context.
# `podman run` fails on some virtual machines (crun cannot set rlimits), so the commands run with
# `buildah run --isolation chroot`, which applies the image's user, working directory and environment as `docker run`.
#
# The Debian image and the base image are kept between runs (tagged by what they were made from: debootstrap takes
# a minute or more, the base another few); the project image, localhost/ganforge-check, is rebuilt each run and the
# previous one removed, so nothing grows from run to run (`podman rmi` all three to start cold). Exit 0 when the
# check passes, or when it cannot run here (one line saying why: a missing tool, not root, no CPU wheel, no Debian
# mirror); 1 when the image does not build or a command inside it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_SUITE=bookworm # its python3 is 3.11, hence the cp311 wheel
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYTHON_TAG=cp311
PROJECT_IMAGE=localhost/ganforge-check
BASE_REPO=localhost/ganforge-check-base
DEBIAN_IMAGE=localhost/ganforge-check-debian:$DEBIAN_SUITE
PODMAN=(podman --cgroup-manager=cgroupfs)
BUILD=("${PODMAN[@]}" build --isolation chroot --network=host --pull=never --layers=false)
TORCH_SPEC=${TORCH_SPEC:-$(sed -n 's/^TORCH_SPEC ?= //p' Makefile)}
# 32 flat-colour 32x32 PNGs from the image's own Pillow: enough for `dataset build` and a few training steps.
MAKE_IMAGES='
import random, pathlib
from PIL import Image
folder = pathlib.Path("images")
folder.mkdir()
rng = random.Random(0)
for i in range(32):
    Image.new("RGB", (32, 32), tuple(rng.randrange(256) for _ in range(3))).save(folder / f"{i:02d}.png")
'
# The report's lines that are neither ok nor skipped: "status id: value; ...".
DOCTOR_NOTES='
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
lines = [c["status"] + " " + c["id"] + ": " + c["value"] for c in checks if c["status"] in ("warning", "failure")]
print("; ".join(lines) or "none")
'
CHECK_WEIGHTS='from ganforge.metrics.inception import resolve_weights; print(resolve_weights(url=None))'

skip() {
    echo "container check skipped: $*"
    exit 0
}
fail() {
    echo "container check FAILED: $*" >&2
    exit 1
}
# Runs a command with its output in $work/step.log; on failure shows the log's end and fails with what was being done.
step() {
    local what=$1
    shift
    "$@" >"$work/step.log" 2>&1 || {
        tail -n 40 "$work/step.log" >&2
        fail "$what"
    }
}
image_mb() { echo $(($("${PODMAN[@]}" image inspect -f '{{.Size}}' "$1") / 1000000)); }
cleanup() {
    [[ -z ${container:-} ]] || buildah rm "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
}

for tool in podman buildah debootstrap; do
    command -v "$tool" >/dev/null || skip "$tool not found (Debian: apt-get install podman buildah debootstrap)"
done
[[ $(id -u) == 0 ]] || skip "needs root (debootstrap and rootful podman)"
[[ $TORCH_SPEC == torch==* ]] || skip "TORCH_SPEC '$TORCH_SPEC' is not an exact torch==VERSION pin"
"${PODMAN[@]}" info >/dev/null 2>&1 || skip "podman does not work here: $("${PODMAN[@]}" info 2>&1 | tail -n 1)"
work=$(mktemp -d /tmp/ganforge-container-check.XXXXXX)
container=
trap cleanup EXIT

debian_note="cached"
if ! "${PODMAN[@]}" image exists "$DEBIAN_IMAGE"; then
    SECONDS=0
    debootstrap --variant=minbase --include=python3-venv,ca-certificates "$DEBIAN_SUITE" "$work/rootfs" \
        "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
        skip "debootstrap could not make a Debian $DEBIAN_SUITE system from $DEBIAN_MIRROR:" \
            "$(tail -n 1 "$work/debootstrap.log")"
    rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
    tar -C "$work/rootfs" -c . | "${PODMAN[@]}" import --quiet - "$DEBIAN_IMAGE" >/dev/null
    rm -rf "$work/rootfs"
    debian_note="made in ${SECONDS} s"
fi

# The base is rebuilt when what it is made from changes: the Debian image, its Containerfile, the pin, the host CAs.
base_key=$({
    "${PODMAN[@]}" image inspect -f '{{.Id}}' "$DEBIAN_IMAGE"
    echo "$TORCH_SPEC"
    cat benchmarks/container_base.Containerfile
    cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
} | sha256sum | cut -c1-16)
base_image=$BASE_REPO:$base_key
base_note="cached"
if ! "${PODMAN[@]}" image exists "$base_image"; then
    SECONDS=0
    mkdir -p "$work/base/wheels" "$work/base/extra-ca"
    python3 -m pip download "$TORCH_SPEC+cpu" --no-deps --only-binary=:all: --python-version 3.11 \
        --implementation cp --abi "$PYTHON_TAG" --platform "manylinux_2_28_$(uname -m)" -d "$work/base/wheels" \
        >"$work/pip.log" 2>&1 || skip "pip finds no CPU wheel $TORCH_SPEC+cpu for $PYTHON_TAG (a local wheel" \
        "folder, or PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu)"
    cp /usr/local/share/ca-certificates/*.crt "$work/base/extra-ca/" 2>/dev/null || true
    cp benchmarks/container_base.Containerfile "$work/base/Containerfile"
    step "the base image did not build" "${BUILD[@]}" --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" -t "$base_image" \
        "$work/base"
    rm -rf "$work/base"
    "${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$BASE_REPO" |
        { grep -vxF "$base_image" || true; } | xargs -r "${PODMAN[@]}" rmi >/dev/null
    base_note="built in ${SECONDS} s"
fi

SECONDS=0
previous=$("${PODMAN[@]}" image inspect -f '{{.Id}}' "$PROJECT_IMAGE" 2>/dev/null || true)
step "the Dockerfile did not build on $base_image" "${BUILD[@]}" --build-arg BASE_IMAGE="$base_image" \
    -t "$PROJECT_IMAGE" .
project_seconds=$SECONDS
current=$("${PODMAN[@]}" image inspect -f '{{.Id}}' "$PROJECT_IMAGE")
[[ -z $previous || $previous == "$current" ]] || "${PODMAN[@]}" rmi "$previous" >/dev/null 2>&1 || true

SECONDS=0
mapfile -t entrypoint < <("${PODMAN[@]}" image inspect -f '{{range .Config.Entrypoint}}{{println .}}{{end}}' \
    "$PROJECT_IMAGE" | sed '/^$/d')
((${#entrypoint[@]})) || fail "the image has no ENTRYPOINT"
container=$(buildah from --pull=never "$PROJECT_IMAGE")
in_image() { buildah run --isolation chroot "$container" -- "$@"; }
out="$work/out"
in_mounted() { buildah run --isolation chroot -v "$out:/data" "$container" -- "$@"; }

uid=$(in_image id -u) || fail "no command runs in the image"
[[ $uid != 0 ]] || fail "the image runs as root"
version=$(in_image "${entrypoint[@]}" --version) || fail "the entrypoint ${entrypoint[*]} does not start"
expected="ganforge, version $(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml)"
[[ $version == "$expected" ]] || fail "the entrypoint's --version says '$version', not '$expected'"
# Exit 1 is a warning (on this CPU stand-in, no GPU); a failure (exit 2) is one, e.g. a /data the user cannot write.
doctor_rc=0
in_image "${entrypoint[@]}" doctor --json --quick >"$work/doctor.json" 2>"$work/doctor.err" || doctor_rc=$?
doctor_notes=$(python3 -c "$DOCTOR_NOTES" "$work/doctor.json" 2>&1) ||
    fail "ganforge doctor --json exited $doctor_rc without a report: $(tail -n 5 "$work/doctor.err")"
((doctor_rc <= 1)) || fail "ganforge doctor exited $doctor_rc: $doctor_notes"
step "the fid extra's Inception weights are not found in the image" in_image python -c "$CHECK_WEIGHTS"

mkdir "$out"
chown "$uid" "$out" # as a `docker run -v` folder the image's user owns
step "the images for the dataset were not written" in_mounted python -c "$MAKE_IMAGES"
step "ganforge dataset build failed" in_mounted "${entrypoint[@]}" dataset build images ds.zip --resolution 32
step "ganforge train failed" in_mounted "${entrypoint[@]}" train --data ds.zip --outdir runs --cfg tiny --kimg 0.1
run_dir=$(find "$out/runs" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[[ -n $run_dir && -e $run_dir/checkpoints/latest ]] || fail "no run folder with a checkpoint in the mounted folder"
[[ -e $run_dir/report.html ]] || fail "the run wrote no report.html (the report extra)"
owner=$(stat -c %u "$run_dir/checkpoints/latest")
[[ $owner == "$uid" ]] || fail "the run's files belong to uid $owner, not the image's user $uid"

echo "container check passed: Debian image $debian_note; base $base_image ($(image_mb "$base_image") MB) $base_note;" \
    "project image $PROJECT_IMAGE ($(image_mb "$PROJECT_IMAGE") MB) built in $project_seconds s; inside it as" \
    "uid $uid: '$version', doctor exit $doctor_rc ($doctor_notes), Inception weights found, tiny" \
    "training wrote runs/$(basename "$run_dir") to the mounted folder in $SECONDS s"
