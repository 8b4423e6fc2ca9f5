# Codex CLI in the agent container, with rules forbidding network tools, installers and
# remote git. The container is the sandbox (Codex's own Linux sandbox needs privileges the
# agent container does not have). Needs a registry at build time. CLI_VERSION from the manifest.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
ARG CLI_VERSION
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g "@openai/codex@${CLI_VERSION}" && rm -rf /var/lib/apt/lists/* /root/.npm
COPY files/codex.rules /opt/agent-config/codex.rules
RUN mkdir -p /home/agent/.codex/rules && cp /opt/agent-config/codex.rules /home/agent/.codex/rules/swechain.rules \
 && chown -R 1000:1000 /home/agent/.codex
USER 1000
