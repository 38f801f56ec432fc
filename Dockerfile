# One image for every service; the compose file and the Helm chart pick the entry point.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.build.json ./
# Fixes to kafkajs that npm ci applies (postinstall); see patches/README.md.
COPY patches ./patches
COPY libs ./libs
COPY apps ./apps
COPY test ./test
RUN npm ci && npx tsc -b tsconfig.build.json && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
USER node
# The image's own default is the dispatcher, with the Node flags npm start gives it
# (scripts/node-flags.mjs); compose and the chart name each app's command themselves.
CMD ["node", "--min-semi-space-size=64", "--max-semi-space-size=64", "apps/dispatcher/dist/main.js"]
