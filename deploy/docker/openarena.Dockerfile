# The OpenArena dedicated server with tickpack's Agones sidecar
# (`tickpack agones-sidecar`), for an Agones Fleet written by
# `tickpack agones fleet` (docs/agones.md). One image, two containers of the
# pod: the game (`/usr/games/openarena-server`) and the sidecar (`tickpack`).
# Build from the repository root:
#   docker build -f deploy/docker/openarena.Dockerfile -t tickpack-openarena:0.1.0 .

# Builder: the workspace's `tickpack` binary, from the locked dependencies.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p tickpack --bin tickpack

# Runtime: Debian 12's OpenArena server (ioquake3 and the game data), the
# sidecar binary, an unprivileged user whose home holds the game's config.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends openarena-server \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --create-home --home-dir /home/openarena openarena
COPY --from=build /src/target/release/tickpack /usr/local/bin/tickpack
USER openarena
ENV HOME=/home/openarena
WORKDIR /home/openarena
# Quake III's protocol (the Fleet maps a node port to it).
EXPOSE 27960/udp
# The Fleet's command overrides this with the bench's settings (and writes
# the map rotation to $HOME/.openarena/baseoa/tickpack.cfg first).
# A LAN server: it announces itself to no master server.
CMD ["/usr/games/openarena-server", "+set", "dedicated", "1", "+set", "sv_master1", "\"\"", "+set", "sv_master2", "\"\"", "+set", "sv_master3", "\"\"", "+set", "sv_master4", "\"\"", "+set", "sv_master5", "\"\"", "+set", "net_port", "27960", "+map", "oa_dm1"]
