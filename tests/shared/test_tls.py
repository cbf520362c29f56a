"""The TLS context the per-call HTTP clients share: the trust each client would have built for itself."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi

from shared.http import tls


def ca_count(context: ssl.SSLContext) -> int:
    return context.cert_store_stats()["x509_ca"]


def first_certificate(bundle: str) -> str:
    text = Path(bundle).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    return text[text.index("-----BEGIN CERTIFICATE-----"):text.index(end) + len(end)] + "\n"


def test_one_context_per_trust_mode_verifying_hosts() -> None:
    context = tls.verified(False)
    assert tls.verified(False) is context
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert ca_count(context) == ca_count(ssl.create_default_context(cafile=certifi.where())) > 0


def test_trusting_the_environment_reads_the_ca_file_it_names(tmp_path, monkeypatch) -> None:
    bundle = tmp_path / "one-ca.pem"
    bundle.write_text(first_certificate(certifi.where()), encoding="ascii")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    built = tls.verified.__wrapped__(True)  # uncached: what a process started with this environment holds
    assert ca_count(built) == 1
    assert ca_count(tls.verified.__wrapped__(False)) > 1  # trust_env=False ignores it, as httpx does
