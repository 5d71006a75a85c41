# The reference server (`tickpack server --agones`) for an Agones Fleet
# written by `tickpack agones fleet` (docs/agones.md). Build from the
# repository root:
#   docker build -f deploy/docker/tickpack-server.Dockerfile -t tickpack-server:0.1.0 .
# The tag's version is the one `tickpack --version` prints; the manifest
# names that image unless given --image.

# Builder: the workspace's `tickpack` binary, from the locked dependencies.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p tickpack --bin tickpack

# Runtime: Debian 12, the binary, an unprivileged user.
FROM debian:bookworm-slim
RUN useradd --system --create-home --home-dir /home/tickpack tickpack
COPY --from=build /src/target/release/tickpack /usr/local/bin/tickpack
USER tickpack
WORKDIR /home/tickpack
# tickpack's protocol (the Fleet maps a node port to it).
EXPOSE 27015/udp
# The Fleet's command overrides this with the bench's settings.
CMD ["/usr/local/bin/tickpack", "server", "--bind", "0.0.0.0:27015", "--agones"]
