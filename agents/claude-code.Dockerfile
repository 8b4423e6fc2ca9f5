# Claude Code in the agent container, with a deny list for network tools, installers and
# remote git. Needs a registry at build time (SWECHAIN_BUILD_NETWORK=default).
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g @anthropic-ai/claude-code@2.1.332 && rm -rf /var/lib/apt/lists/* /root/.npm
RUN mkdir -p /opt/agent-config && printf '%s\n' '{"permissions": {"deny": [' \
  '"WebFetch", "WebSearch", "Bash(curl:*)", "Bash(wget:*)", "Bash(nc:*)", "Bash(ssh:*)",' \
  '"Bash(pip install:*)", "Bash(pip3 install:*)", "Bash(python -m pip install:*)", "Bash(uv:*)",' \
  '"Bash(npm install:*)", "Bash(npx:*)", "Bash(apt-get:*)",' \
  '"Bash(git push:*)", "Bash(git pull:*)", "Bash(git fetch:*)", "Bash(git clone:*)", "Bash(git remote:*)"' \
  ']}}' > /opt/agent-config/claude-settings.json
USER 1000
