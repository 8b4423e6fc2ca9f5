# The persistent agent container's image: the start version's code, no tests.
ARG DEPS
FROM ${DEPS}
COPY --chown=1000:1000 code /app/code
# Login shells (Codex runs its commands with `sh -lc`) get PATH from /etc/profile, which
# resets it; profile.d puts the chain's venv back in front.
RUN echo 'PATH="/opt/venv/bin:$PATH"; export PATH' > /etc/profile.d/swechain-venv.sh
USER 1000
WORKDIR /app
ENV HOME=/home/agent
