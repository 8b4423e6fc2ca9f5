# The test agent image: tests/fake_cli/fake_cli.py installed as claude, codex and opencode,
# with the shipped manifests' config files where their Dockerfiles put them
# (agents/*.Dockerfile), and the recorded streams and the toy chain's gold patches.
ARG AGENT_IMAGE
FROM ${AGENT_IMAGE}
ARG CLI_VERSION
USER 0
COPY files/ /opt/fake/
RUN mkdir -p /opt/agent-config /home/agent/.codex/rules \
 && cp /opt/fake/claude-settings.json /opt/fake/opencode.json /opt/fake/codex.rules /opt/agent-config/ \
 && cp /opt/fake/codex.rules /home/agent/.codex/rules/swechain.rules && chown -R 1000:1000 /home/agent/.codex \
 && chmod 755 /opt/fake/fake_cli.py && echo "${CLI_VERSION}" > /opt/fake/cli-version \
 && for cli in claude codex opencode; do ln -s /opt/fake/fake_cli.py /usr/local/bin/$cli; done
USER 1000
