# Multi-stage build of the single binary; the runtime image is distroless,
# non-root, with no shell. tests/dockerfile.rs checks this file against
# Cargo.toml and the manifests (README "Container image").
FROM rust:1.95-bookworm AS build
WORKDIR /src
# Only what Cargo needs for the binary: the manifest, the lock file, the
# sources, and the bench files Cargo.toml declares.
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY benches benches
RUN cargo build --release --locked --bin blueprint-operator

# cc: glibc and libgcc_s, the shared libraries the binary links.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/blueprint-operator /usr/local/bin/blueprint-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/blueprint-operator"]
