"""Throwaway TLS certificates a detector makes for one run (docs/runtime.md, "Detector runtime").

A detector that asks "does this client trust a server it should not?" needs a certificate the
agent could not have seen or pre-arranged: made here, in the detector container, with the base
image's ``openssl``, never written into the agent's state.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import NamedTuple

from twinforge_detectors.errors import EvidenceError


class Certificate(NamedTuple):
    """A certificate and its private key, PEM text (what ``ssl.SSLContext.load_cert_chain`` reads)."""

    cert_pem: str
    key_pem: str


def self_signed(host: str = "localhost", days: int = 1, timeout: float = 30) -> Certificate:
    """A fresh self-signed server certificate for ``host`` (and 127.0.0.1), signed by no known authority.

    Args:
        host: DNS name in the subject and subjectAltName (a hostname check passes for it).
        days: Validity from now.
        timeout: Seconds ``openssl`` may take.

    Returns:
        The certificate and its P-256 key; a new key pair on every call.

    Raises:
        EvidenceError: ``openssl`` is missing or failed (the detector cannot probe, so it must not guess).
    """
    with tempfile.TemporaryDirectory(prefix="tls-") as folder:
        cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        command = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", str(days), "-subj", f"/CN={host}", "-keyout", key, "-out", cert,
            "-addext", f"subjectAltName=DNS:{host},IP:127.0.0.1",
            "-addext", "extendedKeyUsage=serverAuth",
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EvidenceError(f"openssl could not make a certificate: {exc}") from exc
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or [""])[-1][:200]
            raise EvidenceError(f"openssl could not make a certificate (exit {done.returncode}): {tail}")
        with open(cert, encoding="ascii") as c, open(key, encoding="ascii") as k:
            return Certificate(c.read(), k.read())
