# syntax=docker/dockerfile:1
#
# The volcano-rs image: the release binary alone on a distroless base, running as non-root.
#
#   docker build -t ghcr.io/volcano-rs/volcano-rs:0.1.0 .
#
# Entrypoint /volcano-rs, default command `run` (the daemon); `simulate` works too:
#   docker run --rm -v "$PWD/examples:/in:ro" IMAGE simulate /in/cluster.yaml

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS builder
WORKDIR /src
COPY . .
# The release profile keeps line tables for profiling (docs/benchmarks.md); the image does not
# need them.
ENV CARGO_PROFILE_RELEASE_DEBUG=0
# Cache mounts keep downloaded crates and build artefacts between builds; the binary is copied
# out of the cached target directory in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p volcano-rs \
    && install -D -m 0755 target/release/volcano-rs /out/volcano-rs

# Same Debian release as the builder, so the glibc the binary links against is present. TLS is
# rustls: no OpenSSL needed.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/volcano-rs /volcano-rs
# distroless' "nonroot" user; the Helm chart runs the pod as the same uid/gid.
USER 65532:65532
# Metrics (--listen-address) and health (--healthz-address) ports.
EXPOSE 8080 11251
ENTRYPOINT ["/volcano-rs"]
CMD ["run"]
