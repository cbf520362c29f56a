# One image for every Python service of Hermes Stack; docker-compose.yml gives each service its command.
# The wheel stage builds the product (shared, services and the bundled skills) into a wheel; the image
# installs that wheel and keeps no source checkout, so what runs is exactly what the package ships.
FROM python:3.11-slim AS wheel
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DATA_DIR=/data

# bubblewrap: the terminal's per-user sandbox (TERMINAL_SANDBOX=bwrap). postgresql-client: `hstack backup` and
# `hstack restore` on Postgres (pg_dump, psql); its major version (15, Debian bookworm's) is the compose
# file's postgres image's, since pg_dump refuses a newer server.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap postgresql-client \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 hstack \
    && useradd --system --uid 10001 --gid hstack --home-dir /app --create-home --shell /usr/sbin/nologin hstack \
    && mkdir -p /data \
    && chown hstack:hstack /data

# Dependencies first: this layer is rebuilt only when the pins change.
COPY requirements.txt /tmp/requirements.txt
RUN pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt

COPY --from=wheel /wheels /tmp/wheels
RUN pip install --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels

WORKDIR /app
USER hstack
EXPOSE 8642

# The api's liveness; docker-compose.yml gives the workers and the curator their own checks.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8642/healthz', timeout=4)"]

CMD ["python", "-m", "uvicorn", "--factory", "services.api.main:create_app", "--host", "0.0.0.0", "--port", "8642", "--no-proxy-headers"]
