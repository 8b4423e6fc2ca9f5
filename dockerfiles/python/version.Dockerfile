# One chain version: its hidden tests and protected files, read-only for the runner.
ARG DEPS
FROM ${DEPS}
COPY version /opt/swechain/version
RUN chmod -R a+rX,go-w /opt/swechain/version
USER 1001
WORKDIR /work
