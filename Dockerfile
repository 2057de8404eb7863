# One image for every service of the orchestrator (worker, bridge, sandbox,
# codec endpoint); docker-compose.yml picks the command.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 13 is a Node-API addon; the toolchain is there in case it must build from source.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# npm ci runs the Node preflight (package.json's preinstall) first.
COPY scripts/preflight.cjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# The provider sandbox, which compose runs until ESIGN_PROVIDER_URL names a real provider; no product code imports it.
COPY packages/sandbox ./packages/sandbox
COPY workflows ./workflows
COPY activities ./activities
COPY scripts ./scripts
COPY bin ./bin
# Production workers load a prebuilt workflow bundle instead of bundling at start.
RUN node --import tsx scripts/bundle-workflows.ts

FROM node:24-bookworm-slim
ENV NODE_ENV=production ESIGN_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
WORKDIR /app
COPY --from=build /app /app
# Where the services keep data and secrets (compose mounts volumes here, which start with these owners and modes):
# the node user's alone. The code stays root's, so a compromised service cannot change it (compose also mounts the
# root file system read-only).
RUN install -d -o node -g node -m 0700 /data /data/sandbox /data/archive /data/documents /data/bridge /secrets
USER node
CMD ["node", "--max-semi-space-size=16", "--heap-growing-percent=50", "--import", "tsx", "src/worker/main.ts"]
