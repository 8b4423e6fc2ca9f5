# OpenCode in the agent container, with a permission config that denies web fetch and web
# search, network tools, installers and remote git. Needs a registry at build time.
# CLI_VERSION comes from the manifest's cli_version.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
ARG CLI_VERSION
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g "opencode-ai@${CLI_VERSION}" && rm -rf /var/lib/apt/lists/* /root/.npm
COPY files/opencode.json /opt/agent-config/opencode.json
USER 1000
