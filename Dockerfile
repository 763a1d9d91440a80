# featurebox image: one static binary, a link per applet and the example
# nfd-worker.conf on an empty (scratch) root, running as nobody.
#
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 -t featurebox .
#
# The build stage runs on the build machine's platform and cross-compiles
# with the project's own Makefile: `make image-rootfs ARCH=...` makes the
# final image's whole file tree in build/image/ARCH/rootfs, the same target
# tests/image.sh checks without a Docker engine. The final stage copies that
# tree and nothing else (scripts/image-check holds this file to it).
# Build on an amd64 machine: scripts/install-deps installs cross compilers
# for aarch64 and armhf only (on an arm64 machine amd64 images fail to build).
#
# Without Docker: `make oci` writes the same image for the three platforms as
# one OCI archive (build/oci/featurebox.tar), built from this file as
# scripts/image-check reads it (see the README, "Air-gapped clusters").
#
# Differences from upstream NFD's minimal image: the applets are symlinks to
# /usr/bin/featurebox (relative, as `make image-rootfs` makes them) and the
# entrypoint is featurebox itself, so a pod names its applet in `command`
# (`command: ["nfd-worker"]`, found through PATH) or in `args`.

# Debian 12, the release scripts/install-deps and the README target; the
# mirror is whatever the base image's apt sources name.
FROM --platform=$BUILDPLATFORM debian:bookworm AS build
WORKDIR /src
# install-deps first and alone, so the package layer survives source edits
COPY scripts/install-deps scripts/install-deps
RUN scripts/install-deps --build-only && rm -rf /var/lib/apt/lists/*
# .dockerignore lets in only what the release build reads (no build/ objects
# of the host's, no config.mak), plus build/cache: pinned tarballs that
# scripts/fetch-deps verifies by sha256 before use.
COPY . .
# Docker's TARGETARCH -> the Makefile's ARCH (armhf is ARMv7 hard-float).
# Declared here, not above: the package layer stays one for all platforms.
ARG TARGETARCH
ARG TARGETVARIANT
RUN case "$TARGETARCH" in \
	amd64) arch=x86_64 ;; \
	arm64) arch=aarch64 ;; \
	arm) arch=armhf ;; \
	*) echo "featurebox: no build for $TARGETARCH (amd64, arm64, arm/v7)" >&2; exit 1 ;; \
	esac && \
	if [ "$TARGETARCH" = arm ] && [ "${TARGETVARIANT:-v7}" != v7 ]; then \
		echo "featurebox: no build for arm/$TARGETVARIANT (arm/v7 only)" >&2; exit 1; \
	fi && \
	make -j"$(nproc)" image-rootfs ARCH="$arch"

# One scratch stage per TARGETARCH, each holding exactly one image-rootfs
# tree: COPY --from cannot take a variable, FROM can (the final stage).
FROM scratch AS rootfs-amd64
COPY --from=build /src/build/image/x86_64/rootfs/ /

FROM scratch AS rootfs-arm64
COPY --from=build /src/build/image/aarch64/rootfs/ /

FROM scratch AS rootfs-arm
COPY --from=build /src/build/image/armhf/rootfs/ /

FROM rootfs-${TARGETARCH}
LABEL org.opencontainers.image.title="featurebox" \
	org.opencontainers.image.description="Node feature discovery, devicetree and GPU node daemons in one static binary: nfd-worker, nfd-master, dt-labeller, gpu-node-agent, vfio-switch" \
	org.opencontainers.image.base.name="scratch"
ENV PATH=/usr/bin
USER 65534:65534
ENTRYPOINT ["/usr/bin/featurebox"]
CMD ["--help"]
