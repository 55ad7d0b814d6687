# Multi-stage build of the single binary; the runtime image is distroless,
# non-root, with no shell.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY benches benches
COPY tests tests
COPY examples examples
COPY manifests manifests
RUN cargo build --release --locked --bin blueprint-operator

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/blueprint-operator /usr/local/bin/blueprint-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/blueprint-operator"]
