# One conan version: its hidden tests and protected files, read-only for the runner, plus the
# tool locations the reference's image gives conan's functional tests (test/conftest_user.py,
# as in CUHK-ARISE/SWE-Chain dockerfiles/conan-2.Dockerfile): the Debian cmake for the versions
# it can stand for, every other tool skipped.
ARG DEPS
FROM ${DEPS}
COPY version /opt/swechain/version
RUN mkdir -p /opt/swechain/version/hidden/test /opt/swechain/version/protected \
 && printf '%s\n' \
    'tools_locations = {' \
    '    "cmake": {' \
    '        "3.15": {"path": {"Linux": "/usr/bin"}},' \
    '        "3.16": {"path": {"Linux": "skip-tests"}},' \
    '        "3.17": {"path": {"Linux": "skip-tests"}},' \
    '        "3.19": {"path": {"Linux": "/usr/bin"}},' \
    '        "3.23": {"path": {"Linux": "/usr/bin"}},' \
    '        "3.27": {"path": {"Linux": "/usr/bin"}},' \
    '        "4.2": {"path": {"Linux": "skip-tests"}},' \
    '    },' \
    '    "bazel": {v: {"path": {"Linux": "skip-tests"}} for v in ("6.3.2", "6.5.0", "7.1.2", "7.4.1", "8.0.0", "6.x", "7.x", "8.x")},' \
    '    "premake": {"5.0.0": {"path": {"Linux": "skip-tests"}}},' \
    '    "qbs": {"2.6.0": {"path": {"Linux": "skip-tests"}}},' \
    '    "scons": {"disabled": True},' \
    '    "node": {"disabled": True},' \
    '}' > /opt/swechain/version/hidden/test/conftest_user.py \
 && chmod -R a+rX,go-w /opt/swechain/version
USER 1001
WORKDIR /work
