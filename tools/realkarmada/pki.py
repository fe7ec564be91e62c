"""Locally generated certificates for the control plane (one CA; every server on 127.0.0.1)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAYS = 30


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write_key(key: rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


class Pki:
    """A CA in `dir` and leaf certificates signed by it, written as <name>.crt/<name>.key."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        dir.mkdir(parents=True, exist_ok=True)
        self._ca_key = _key()
        now = dt.datetime.now(dt.UTC)
        self._ca = (
            x509.CertificateBuilder()
            .subject_name(_name("tidal-realkarmada-ca"))
            .issuer_name(_name("tidal-realkarmada-ca"))
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = dir / "ca.crt"
        self.ca.write_bytes(self._ca.public_bytes(serialization.Encoding.PEM))
        _write_key(self._ca_key, dir / "ca.key")

    def ca_pem(self) -> bytes:
        return self.ca.read_bytes()

    def issue(
        self,
        name: str,
        cn: str,
        *,
        org: str | None = None,
        dns: tuple[str, ...] = (),
        server: bool = False,
        client: bool = False,
    ) -> tuple[Path, Path]:
        """Sign a leaf for `cn`; servers get 127.0.0.1 and localhost plus `dns` as SANs."""
        key = _key()
        now = dt.datetime.now(dt.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(self._ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=_DAYS))
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if server:
            sans: list[x509.GeneralName] = [
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.DNSName("localhost"),
            ]
            sans += [x509.DNSName(d) for d in dns]
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(self._ca_key, hashes.SHA256())
        crt, key_path = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        return crt, key_path

    def service_account_keys(self) -> tuple[Path, Path]:
        """An RSA key pair for signing service-account tokens (sa.key, sa.pub)."""
        key = _key()
        _write_key(key, self.dir / "sa.key")
        (self.dir / "sa.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return self.dir / "sa.key", self.dir / "sa.pub"
