# OpenCode in the agent container, with a permission config that denies network tools,
# installers and remote git. Needs a registry at build time.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g opencode-ai@1.18.33 && rm -rf /var/lib/apt/lists/* /root/.npm
RUN mkdir -p /opt/agent-config && printf '%s\n' '{"$schema": "https://opencode.ai/config.json",' \
  '"permission": {"webfetch": "deny", "edit": "allow", "bash": {"*": "allow",' \
  '"curl *": "deny", "wget *": "deny", "nc *": "deny", "ssh *": "deny",' \
  '"pip install*": "deny", "pip3 install*": "deny", "python -m pip install*": "deny", "uv *": "deny",' \
  '"npm install*": "deny", "npx *": "deny", "apt-get *": "deny",' \
  '"git push*": "deny", "git pull*": "deny", "git fetch*": "deny", "git clone*": "deny", "git remote*": "deny"}}}' \
  > /opt/agent-config/opencode.json
USER 1000
