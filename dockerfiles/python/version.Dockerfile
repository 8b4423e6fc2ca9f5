# One chain version: its hidden tests and protected files, read-only for the runner.
ARG DEPS
FROM ${DEPS}
COPY version /opt/swechain/version
# Both layers exist even when empty (protected_files may match nothing in a version).
RUN mkdir -p /opt/swechain/version/hidden /opt/swechain/version/protected \
 && chmod -R a+rX,go-w /opt/swechain/version
USER 1001
WORKDIR /work
