# Test environment shared by the versions of a chain: a venv with the hidden-test
# harness and the chain's test dependencies, installed offline from a wheelhouse. The pins
# are a whole resolution (--no-deps), without the package under test.
ARG BASE
FROM ${BASE}
ARG PYTHON
# The chain's python: picks the wheels; a base image with another interpreter is a mistake.
RUN python3 -c "import sys; v = '%d.%d' % sys.version_info[:2]; sys.exit(0 if v == '${PYTHON}' else 'error: the base image has Python ' + v + ' but the chain wants ${PYTHON}: point SWECHAIN_BASE_IMAGE at an image with Python ${PYTHON} (a template with {python})')"
COPY requirements.txt /tmp/swechain/requirements.txt
COPY wheels /tmp/swechain/wheels
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-index --no-deps --find-links /tmp/swechain/wheels -r /tmp/swechain/requirements.txt \
 && rm -rf /tmp/swechain
# agent: the user agents work as; runner: the user hidden tests run as. /work and /out are
# root's: the eval supervisor (root) writes results there, where the runner cannot.
RUN (useradd --create-home --uid 1000 agent || echo 'agent:x:1000:1000::/home/agent:/bin/sh' >> /etc/passwd) \
 && (useradd --create-home --uid 1001 runner || echo 'runner:x:1001:1001::/home/runner:/bin/sh' >> /etc/passwd) \
 && mkdir -p /work /out /app && chown 1000:1000 /app
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    LANG=C.UTF-8
COPY harness /opt/swechain/harness
