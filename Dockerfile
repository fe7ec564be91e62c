# syntax=docker/dockerfile:1
# tidal: build the wheels in one stage, install only wheels in a slim runtime stage.
#   docker build -t tidal:0.1.0 .
#   docker run --rm tidal:0.1.0 --help

# Pinned by digest: the tag alone moves under a rebuild. Bump both together.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY tidal ./tidal
# The project wheel plus a wheel of every runtime dependency, at the versions constraints.txt
# pins: the runtime stage needs no compiler, no index and no source tree.
RUN pip wheel --constraint constraints.txt --wheel-dir /wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    TIDAL_PORT=8080
# Only the built wheels are installed: no source, no build tools in this image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels /wheels/tidal-*.whl \
    && groupadd --gid 10001 tidal \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp \
       --shell /usr/sbin/nologin tidal
# Numeric user so that Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["tidal"]
CMD ["run"]
