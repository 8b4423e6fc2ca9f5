# Codex CLI in the agent container. Its own sandbox denies network to the commands it runs;
# the container's egress network admits only the API host. Needs a registry at build time.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g @openai/codex@0.171.0 && rm -rf /var/lib/apt/lists/* /root/.npm
USER 1000
