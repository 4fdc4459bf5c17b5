# ganforge on NVIDIA GPUs: PyTorch's own CUDA runtime image, so no CUDA toolchain or custom op build is needed.
#   docker build -t ganforge .
#   docker run --gpus all --ipc=host -v "$PWD":/data ganforge train --data /data/ds.zip --outdir /data/runs
# --ipc=host (or --shm-size=16g): DataLoader workers hand batches over through /dev/shm, which Docker caps at 64 MB.
ARG BASE_IMAGE=pytorch/pytorch:2.10.0-cuda12.8-cudnn9-runtime
FROM ${BASE_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/ganforge
COPY pyproject.toml README.md ./
COPY src ./src
# The base image's torch satisfies torch>=2.10, so pip keeps it instead of pulling another CUDA build; the
# dependencies' lower bounds are pyproject.toml's (the package installed is this checkout, pinned by its commit).
# hadolint ignore=DL3013
RUN python -m pip install ".[gpu,fid]" \
    && useradd --create-home --uid 1000 ganforge
USER 1000
WORKDIR /data
ENTRYPOINT ["ganforge"]
CMD ["--help"]
