# gemmd: GPU GEMM service. Build:  docker build -t gemmd:0.1.0 .
# Run:    docker run --gpus all -p 50051:50051 -p 9464:9464 gemmd:0.1.0
# Configuration is by GEMMD_* environment variables (`gemmd --help`).
#
# The two bases are build arguments: NVIDIA's CUDA images by default. CI,
# which cannot reach their registry, builds the same file on a Debian 12
# base made with debootstrap, without CUDA (the CPU engine):
#   --build-arg BUILD_BASE=localhost/debian:12 --build-arg RUN_BASE=localhost/debian:12
#   --build-arg GEMMD_CUDA=OFF                  (scripts/image_test.sh)
ARG CUDA_VERSION=13.0.0
ARG BUILD_BASE=nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04
ARG RUN_BASE=nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04

# ---- build: the same setup and build scripts as a developer's machine and CI
FROM ${BUILD_BASE} AS build
ARG GEMMD_CUDA=ON
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DGEMMD_CUDA=${GEMMD_CUDA} -DGEMMD_TESTS=OFF \
 && bins="build/server/gemmd build/client/gemm-client" \
 && if [ -x build/server/gemmd-selftest ]; then bins="$bins build/server/gemmd-selftest"; fi \
 && scripts/collect-runtime.sh /opt/gemmd $bins

# ---- run: the runtime base (CUDA's: cudart, cuBLAS), the binaries and their libraries
FROM ${RUN_BASE}
RUN groupadd --system --gid 10001 gemmd \
 && useradd --system --uid 10001 --gid gemmd --no-create-home --shell /usr/sbin/nologin gemmd
COPY --from=build /opt/gemmd /opt/gemmd
# Stored matrices live on this volume (--matrix-dir), so handles survive a
# container restart: a crash, kill -9, or exit 3 after a sticky GPU fault.
RUN mkdir -p /var/lib/gemmd/matrices && chown -R 10001:10001 /var/lib/gemmd
VOLUME ["/var/lib/gemmd"]
ENV PATH=/opt/gemmd/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/gemmd/lib:${LD_LIBRARY_PATH} \
    GEMMD_LISTEN=0.0.0.0:50051 \
    GEMMD_METRICS_LISTEN=0.0.0.0:9464 \
    GEMMD_MATRIX_DIR=/var/lib/gemmd/matrices \
    GEMM_TARGET=127.0.0.1:50051
USER 10001:10001
EXPOSE 50051 9464
# grpc.health.v1 through the client: SERVING once every GPU ran its warm-up.
# With TLS on, set GEMM_TLS_CA (and GEMM_TLS_CERT/GEMM_TLS_KEY for mTLS) too.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 CMD ["gemm-client", "--timeout", "4", "health"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["gemmd"]
