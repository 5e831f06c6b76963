# syntax=docker/dockerfile:1
#
# metahook: a release build in the Rust image, run from distroless as the
# non-root user 65532. Build from the repository root:
#
#   docker build -t ghcr.io/metahook/metahook:0.1.0 .
#
# The runtime image holds the binary and glibc/libgcc only: no shell, no
# package manager. It matches the chart's defaults (uid/gid 65532, read-only
# root filesystem, port 8080).
#
# Two ways to the same image:
#   docker build .        the last stage: builds in the Rust image, runs from
#                         distroless. What users build.
#   --target prebuilt     FROM scratch, copying a root filesystem already laid
#                         out: the build context is that directory, not the
#                         repository. scripts/image.sh builds it this way with
#                         buildah, no daemon and no registry needed (the other
#                         stages are skipped, their base images never pulled).

ARG RUST_VERSION=1.95

# Build on bookworm: the binary links against the build image's glibc, which
# must not be newer than the runtime's (distroless cc-debian12 is bookworm).

FROM rust:${RUST_VERSION}-slim-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target/ between builds; the binary is
# copied out of the cached target/ so the next stage can see it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin metahook \
    && install -D -m 0755 target/release/metahook /out/metahook

# scripts/image.sh lays the context out: the binary at /usr/local/bin, the
# shared libraries ldd names for it and the loader, Debian's CA bundle,
# /etc/passwd and /etc/group with nonroot 65532, /etc/nsswitch.conf; what
# distroless gives. Keep the settings below in step with the last stage.
FROM scratch AS prebuilt
COPY . /
USER 65532:65532
# distroless sets SSL_CERT_FILE too.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
ENV MALLOC_MMAP_THRESHOLD_=131072
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/metahook"]
CMD ["serve"]

# The default (last) stage.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/metahook /usr/local/bin/metahook
USER 65532:65532
# glibc raises its mmap threshold to the size of each large block freed (up
# to 32 MiB), after which request bodies come from its arenas and stay in RSS
# once freed, so the process keeps the peak of every burst of bodies
# (docs/robustness.md, bench/memory.sh). A fixed threshold returns them at
# once.
ENV MALLOC_MMAP_THRESHOLD_=131072
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/metahook"]
CMD ["serve"]
