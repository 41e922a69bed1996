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
# Not built on the kit's CI machine (no container engine runs there); tests/test_packaging.py
# only checks that every COPY source exists and that CMD is the documented command.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
# mockserver/_bundled links to spec/ and fixtures/; the wheel carries copies of both.
COPY spec ./spec
COPY fixtures ./fixtures
COPY mockserver ./mockserver
COPY conformance ./conformance
RUN pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MOCKSERVER_CONTROL_TOKEN=""
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --disable-pip-version-check "$(ls /wheels/*.whl)[postgresql]" \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin mock
USER mock
WORKDIR /home/mock
# Parse the contract and fixtures once now: the parsed YAML is cached in ~/.cache/mockserver, so
# every container starts in about a third of a second instead of half a second.
RUN python -c "from mockserver.app import create_app; create_app().close()"
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/v1/openapi.json', timeout=4)"]
CMD ["mockserver", "--host", "0.0.0.0", "--port", "8080"]
