# The mock server only: the kit with its PostgreSQL driver (the `postgresql` extra; no
# conformance suite, no test tools).
#
#   docker build -t cgcas-kit-mock .
#   docker run --rm -p 8080:8080 -e MOCKSERVER_CONTROL_TOKEN="$(openssl rand -hex 24)" cgcas-kit-mock
#
# The mock listens on every address of the container, so its control plane (/_mock/) needs a
# token: $MOCKSERVER_CONTROL_TOKEN when set, else one the mock makes and prints in its log
# (`docker logs`), with the inspector's address that hands it over.
#
# BASE: any image with Python 3.11 or later as `python3`, its `venv` module with ensurepip, and
# `useradd`. The default comes from Docker Hub; the kit's CI builds on a base made from Debian's
# packages instead, with no registry (tests/container/build_and_call.sh:
# `mmdebstrap --variant=minbase --include=python3,python3-venv bookworm`). The kit is installed
# into a virtual environment (/opt/mock) on either base: Debian's python3 has no pip of its own,
# and its system Python refuses pip installs (PEP 668), while `python3 -m venv` brings pip into
# the environment from ensurepip on both.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
# mockserver/_bundled links to spec/ and fixtures/; the installed kit carries copies of both.
COPY spec ./spec
COPY fixtures ./fixtures
COPY mockserver ./mockserver
COPY conformance ./conformance
RUN python3 -m venv /opt/mock \
    && /opt/mock/bin/pip install --no-cache-dir --disable-pip-version-check ".[postgresql]"

FROM ${BASE}
ENV PATH=/opt/mock/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MOCKSERVER_CONTROL_TOKEN=""
# The environment as built (same path, same base Python): nothing is downloaded here.
COPY --from=build /opt/mock /opt/mock
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin mock
USER mock
WORKDIR /home/mock
# Parse the contract and fixtures once now: the parsed YAML is cached in ~/.cache/mockserver, so
# every container starts in about a third of a second instead of half a second.
RUN python3 -c "from mockserver.app import create_app; create_app().close()"
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/v1/openapi.json', timeout=4)"]
CMD ["mockserver", "--host", "0.0.0.0", "--port", "8080"]
