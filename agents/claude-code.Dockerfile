# Claude Code in the agent container, with its settings (deny list for network tools,
# installers and remote git) at /opt/agent-config. Needs a registry at build time
# (SWECHAIN_BUILD_NETWORK=default). CLI_VERSION comes from the manifest's cli_version.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
ARG CLI_VERSION
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g "@anthropic-ai/claude-code@${CLI_VERSION}" && rm -rf /var/lib/apt/lists/* /root/.npm
COPY files/claude-settings.json /opt/agent-config/claude-settings.json
USER 1000
