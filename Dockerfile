# One image for every service of the orchestrator (worker, bridge, codec endpoint); docker-compose.yml picks the
# command. It runs the JavaScript compiled when the image is built, with the production dependencies only: no
# TypeScript compiler, no tsx and no development dependency at run time
# (docs/decisions/compiled-javascript-in-production.md). The provider sandbox, a test double, is the `sandbox` stage.
FROM node:24-bookworm-slim AS toolchain
WORKDIR /app
# better-sqlite3 13 is a Node-API addon; the toolchain is there in case it must build from source.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# npm ci runs the Node preflight (package.json's preinstall) first.
COPY scripts/preflight.cjs ./scripts/

# The production dependencies alone: the runtime stage's node_modules.
FROM toolchain AS production-dependencies
RUN npm ci --omit=dev --no-audit --no-fund

# Every dependency, the compiler among them: compiles the code (`npm run build`, into dist/) and writes the prebuilt
# workflow bundle from the compiled workflows (dist/workflow-bundle.js), so workers start without bundling.
FROM toolchain AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY scripts/bundle-workflows.ts ./scripts/
RUN npm run build:workflows

# The provider sandbox (compose's `sandbox` service, until ESIGN_PROVIDER_URL names a real provider): development and
# tests only, never part of the product. It runs its source through tsx, so this stage keeps every dependency.
FROM build AS sandbox
COPY packages/sandbox ./packages/sandbox
RUN install -d -o node -g node -m 0700 /data /data/sandbox
USER node
CMD ["node", "--import", "tsx", "packages/sandbox/src/main.ts"]

# The image: the compiled code, the workflow bundle, the CLI's launcher and the production dependencies.
FROM node:24-bookworm-slim
ENV NODE_ENV=production ESIGN_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
WORKDIR /app
COPY package.json ./
COPY scripts/preflight.cjs ./scripts/
COPY bin ./bin
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Where the services keep data and secrets (compose mounts volumes here, which start with these owners and modes):
# the node user's alone. The code stays root's, so a compromised service cannot change it (compose also mounts the
# root file system read-only).
RUN install -d -o node -g node -m 0700 /data /data/archive /data/documents /data/bridge /data/keys /secrets
USER node
CMD ["node", "--max-semi-space-size=16", "--heap-growing-percent=50", "dist/src/worker/main.js"]
