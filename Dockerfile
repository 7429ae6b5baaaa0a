# gemmd: GPU GEMM service. Build:  docker build -t gemmd:0.1.0 .
# Run:    docker run --gpus all -p 50051:50051 -p 9464:9464 gemmd:0.1.0
# Configuration is by GEMMD_* environment variables (`gemmd --help`).
ARG CUDA_VERSION=13.0.0

# ---- build: the same setup and build scripts as a developer's machine and CI
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DGEMMD_CUDA=ON \
 && scripts/collect-runtime.sh /opt/gemmd build/server/gemmd build/server/gemmd-selftest build/client/gemm-client

# ---- run: CUDA runtime (cudart, cuBLAS), the two binaries and their libraries
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04
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
