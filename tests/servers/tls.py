"""A self-signed certificate for test host names, so the loopback servers can speak HTTPS and
clients can verify them with a context that trusts this certificate only."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    certfile: Path
    keyfile: Path

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context that trusts only the test certificate."""
        return ssl.create_default_context(cafile=str(self.certfile))


def self_signed(folder: Path, names: Sequence[str]) -> TlsFiles:
    """A certificate valid for `names` (the first is its common name), written into `folder`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    files = TlsFiles(folder / "cert.pem", folder / "key.pem")
    files.certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    files.keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files
