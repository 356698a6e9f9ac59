# One image for both programs: `gateway` (the entrypoint) and `sim serve` (override the command with
# ["/nodejs/bin/node", "/app/bin/sim.js", "serve", ...]). Runtime: distroless Node 24, non-root
# (uid/gid 65532), no shell, no package manager, read-only root filesystem friendly (nothing is
# written at runtime).
#
# Base images are pinned by digest through the *_DIGEST build arguments (published multi-arch
# manifest digests of the two tags). The release workflow checks that both still resolve before it
# builds. Refresh them with
#   .github/scripts/pin-base-images.sh            (crane, or docker buildx imagetools inspect)
# and commit the result; docs/operations.md ("Base images") explains the procedure.
#
# No `# syntax=` line: the builder's own Dockerfile frontend is used, so a build needs no registry
# beyond the base images, and `make image-local` builds this file with no registry at all.

ARG BUILD_IMAGE=docker.io/library/node:24-bookworm-slim
ARG BUILD_IMAGE_DIGEST=sha256:3638d9a6fe4030bd716be989438248074489337ba3275657f93595428be4fc03
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot
ARG RUNTIME_IMAGE_DIGEST=sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a

# ---- build: compile TypeScript with the dev dependencies. The output is platform independent, so
# this stage runs on the build machine's platform even for a multi-arch build.
FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE}${BUILD_IMAGE_DIGEST:+@}${BUILD_IMAGE_DIGEST} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.base.json tsconfig.build.json ./
COPY src ./src
RUN ./node_modules/.bin/tsc -p tsconfig.build.json

# ---- deps: production dependencies only, installed for the target platform (native add-ons, if a
# dependency ever gains one, must match the runtime architecture).
FROM ${BUILD_IMAGE}${BUILD_IMAGE_DIGEST:+@}${BUILD_IMAGE_DIGEST} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
  && npm cache clean --force

# ---- runtime
FROM ${RUNTIME_IMAGE}${RUNTIME_IMAGE_DIGEST:+@}${RUNTIME_IMAGE_DIGEST} AS runtime
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="llm-gateway" \
      org.opencontainers.image.description="OpenAI-compatible routing gateway and simulated inference server" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# V8's young generation is capped at 16 MB per semi-space (the default grows it to 32 MB and more):
# shorter scavenge pauses, and about 25 MB less RSS with 1,000 streams open (docs/performance.md,
# "Heap sizing"). The chart sets the same value through gateway.nodeOptions. One glibc malloc arena:
# the memory V8's compiler threads allocate is reused by the main heap instead of staying
# fragmented in arenas of their own (about 6 MB less with 1,000 streams, no measurable CPU cost).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=16 \
    MALLOC_ARENA_MAX=1
WORKDIR /app
# package.json is read at runtime for --version; everything is owned by root and read-only to the
# process, which runs as 65532.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY bin ./bin
USER 65532:65532
EXPOSE 3000 9090
# Node is PID 1 and installs its own SIGTERM/SIGINT handlers (graceful drain), and it spawns no
# children, so no init process is needed. Exec form: the signal goes to node, not to a shell.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/gateway.js"]
