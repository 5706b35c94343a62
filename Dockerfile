# gpu-review image. For now it runs the CLI (review a diff given on stdin or as a mounted file); the
# self-hosted GitHub App service replaces the entry point when it lands (see README).
FROM node:20-bookworm-slim AS build
WORKDIR /app
# tree-sitter ships prebuilt binaries for linux-x64/arm64; the toolchain is only a fallback.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY checks ./checks
COPY bench ./bench
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Rule documentation for `gpu-review explain`.
COPY --from=build /app/checks ./checks
USER node
ENTRYPOINT ["node", "/app/dist/src/cli.js"]
CMD ["--help"]
