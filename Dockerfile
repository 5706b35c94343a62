# gpu-review: the self-hosted GitHub App service (`node dist/src/server.js`). Settings come from the
# environment at `docker run` time (README "Self-hosted service"); no secret is baked into the image.
# The CLI is in the image too, with git for `--git` and `scan`:
#   docker run --rm -v "$PWD:/src" -w /src IMAGE gpu-review review --git origin/main...HEAD

# BASE: the runtime image. The default is Node's own; for nvcc compiler evidence (`COMPILE=on`, README
# "Compiler evidence") build on a CUDA toolkit image, e.g.
#   docker build --build-arg BASE=nvidia/cuda:13.0.0-devel-ubuntu24.04 -t gpu-review:cuda .
# (a devel image: nvcc, its host compiler and cu++filt; no GPU or driver is needed to compile).
ARG BASE=node:24-bookworm-slim

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
# --ignore-scripts: `prepare` would build before the sources are copied. tree-sitter and its
# grammars then load their bundled prebuilt binaries (node-gyp-build), so no compiler is needed.
RUN npm ci --ignore-scripts
# The tree mirror's native walker (native/mirror.c): optional, the review falls back to a slower JS
# walk without it. Built against the node image's own headers (/usr/local/include/node).
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY native ./native
RUN node scripts/build-native.mjs && mkdir -p native/build/Release
COPY src ./src
COPY checks ./checks
COPY bench ./bench
RUN npx tsc -p tsconfig.json

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/server-deps.mjs ./scripts/
# The CLI's dependencies, then the server stack (optional peers of the CLI package) at the locked versions.
RUN npm ci --omit=dev --ignore-scripts && npm install --no-save --omit=dev --ignore-scripts $(node scripts/server-deps.mjs) && npm cache clean --force

FROM ${BASE}
# A toolkit base has no Node: take the very binary the build stages ran with (glibc-linked, and the
# CUDA images' glibc is newer than bookworm's), and the unprivileged `node` user if it is missing.
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
RUN id -u node >/dev/null 2>&1 || useradd --system --create-home --shell /usr/sbin/nologin node
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    LOG_LEVEL=info
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/native/build/Release ./native/build/Release
COPY --chown=root:root package.json ./
# git for `gpu-review review --git` and `scan` in a mounted repository (owned by another uid, hence
# safe.directory); `gpu-review` on the PATH so the CLI runs as `docker run IMAGE gpu-review ...`.
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/* \
 && git config --system --add safe.directory '*' \
 && chmod 0755 /app/dist/src/cli.js && ln -s /app/dist/src/cli.js /usr/local/bin/gpu-review
# Rule documentation for `gpu-review explain`.
COPY --from=build --chown=root:root /app/checks ./checks
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM (docker stop) finishes the running reviews (in-memory queue: the queued ones too; with
# REDIS_URL they stay in Redis for the other replicas) for up to SHUTDOWN_TIMEOUT_MS (default 25 s):
# give `docker stop -t` a little more than that.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/server.js"]
