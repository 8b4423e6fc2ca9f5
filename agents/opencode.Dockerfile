# OpenCode in the agent container, with a permission config that denies web fetch and web
# search, network tools, installers and remote git. The package (with its platform
# packages, the native binaries) and Node 22 are the build context's npm/ folder, fetched on
# the host (install.npm at cli_version): the build needs no network. Its postinstall, which
# picks the binary for this CPU and checks it runs, runs here as root with HOME=/root, so
# nothing (no root-owned folder) is left in the agent's home.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
COPY npm /opt/agent-cli
RUN cd /opt/agent-cli/node_modules/opencode-ai \
 && HOME=/root PATH=/opt/agent-cli/node_modules/.bin:$PATH node postinstall.mjs \
 && ln -s /opt/agent-cli/node_modules/opencode-ai/bin/opencode.exe /usr/local/bin/opencode \
 && HOME=/root opencode --version && rm -rf /root/.local /root/.cache /root/.config
COPY files/opencode.json /opt/agent-config/opencode.json
USER 1000
