# Stand-in for python:3.11-slim where no registry can be reached: Debian bookworm's own Python 3.11.
FROM hstack-base:bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-pip python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
    && ln -s /usr/bin/python3 /usr/local/bin/python
# The host's CA bundle: pip inside a build reaches PyPI only through the CAs this machine trusts.
COPY ca-certificates.crt /usr/local/share/hstack-host-ca.crt
ENV PIP_CERT=/usr/local/share/hstack-host-ca.crt LANG=C.UTF-8
CMD ["python3"]
