# The persistent agent container's image: the start version's code, no tests.
ARG DEPS
FROM ${DEPS}
COPY --chown=1000:1000 code /app/code
USER 1000
WORKDIR /app
ENV HOME=/home/agent
