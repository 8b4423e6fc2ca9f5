# Claude Code in the agent container, with its settings (deny list for network tools,
# installers and remote git) at /opt/agent-config. The package (with its platform package,
# the native binary) and Node 22 are the build context's npm/ folder, fetched on the host
# (install.npm at cli_version): the build needs no network. Its install script, which puts
# the native binary in place, runs here as root with HOME=/root, so nothing is left in the
# agent's home; the binary itself needs no Node.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
COPY npm /opt/agent-cli
RUN cd /opt/agent-cli/node_modules/@anthropic-ai/claude-code \
 && HOME=/root PATH=/opt/agent-cli/node_modules/.bin:$PATH node install.cjs \
 && ln -s /opt/agent-cli/node_modules/@anthropic-ai/claude-code/bin/claude.exe /usr/local/bin/claude \
 && claude --version
COPY files/claude-settings.json /opt/agent-config/claude-settings.json
USER 1000
