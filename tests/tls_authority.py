"""A certificate authority made for a test, and a server certificate it signed: for https upstreams
on loopback."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest


def authority(
    tmp_path: Path, *, names: tuple[str, ...] = ("localhost",), ip: bool = True
) -> tuple[Path, ssl.SSLContext]:
    """A test authority's certificate (a PEM file) and the server's TLS settings, with a certificate
    it signed for `names` (and 127.0.0.1 when `ip`)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key, issuer: str, signer, *, authority: bool, alt=None):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=authority, path_length=None), critical=True)
        )
        if authority:
            builder = builder.add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
        if alt:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("orspec test authority", ca_key, "orspec test authority", ca_key, authority=True)
    alt = [x509.DNSName(name) for name in names] + ([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))] if ip else [])
    server = certificate(names[0], server_key, "orspec test authority", ca_key, authority=False, alt=alt)
    ca_file, chain, key_file = tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    chain.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(chain, key_file)
    return ca_file, context


def key_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """After `authority(tmp_path)`: the authority's certificate, the server's certificate and its key."""
    return tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key"
