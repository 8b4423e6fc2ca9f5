# What an agent's manifest installs with pip, in a venv of its own on the agent image.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
USER 0
COPY requirements.txt /tmp/agent-tools/requirements.txt
COPY wheels /tmp/agent-tools/wheels
RUN python3 -m venv /opt/agent-tools \
 && /opt/agent-tools/bin/pip install --no-index --find-links /tmp/agent-tools/wheels -r /tmp/agent-tools/requirements.txt \
 && rm -rf /tmp/agent-tools
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin:/opt/agent-tools/bin
USER 1000
