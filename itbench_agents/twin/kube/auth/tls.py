"""HTTPS for the twin's Kubernetes API, so that kubectl sends its credentials.

client-go (kubectl) reads a kubeconfig user's credentials — token, client certificate, exec plugin —
only when the cluster's ``server`` is ``https://`` (``clientcmd.DirectClientConfig.ClientConfig``:
"only try to read the auth information if we are secure"); over plain HTTP every kubectl request is
anonymous, whatever token the kubeconfig holds. ``TwinTLS`` makes a throw-away CA and a server
certificate for 127.0.0.1/localhost per twin; ``enable_tls(endpoint, tls)`` switches an
``HttpEndpoint`` to TLS (the handshake runs in the connection's own thread) and ``kubeconfig_yaml``
writes a kubeconfig that trusts the CA.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import select
import socket
import ssl
import tempfile
import threading
from typing import Any


class TwinTLS:
    """A self-signed CA and a server certificate for the loopback addresses (EC P-256, 10 years)."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
        until = now + dt.timedelta(days=3650)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "itbench-twin-ca")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
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
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for h in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                names.append(x509.DNSName(h))
        names += [x509.DNSName(n) for n in ("kubernetes", "kubernetes.default", "kubernetes.default.svc")]
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_pem: bytes = ca.public_bytes(serialization.Encoding.PEM)
        self.cert_pem: bytes = cert.public_bytes(serialization.Encoding.PEM)
        self._key_pem: bytes = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self._context: ssl.SSLContext | None = None

    @property
    def ca_data(self) -> str:
        """``certificate-authority-data`` for a kubeconfig."""
        return base64.b64encode(self.ca_pem).decode()

    def write_ca(self, path: str | os.PathLike[str]) -> str:
        """Write the CA certificate (for ``requests``' ``verify=`` or ``curl --cacert``); returns the path."""
        with open(path, "wb") as f:
            f.write(self.ca_pem)
        return str(path)

    def server_context(self) -> ssl.SSLContext:
        if self._context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            with tempfile.TemporaryDirectory(prefix="itbench-tls-") as d:
                cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
                with open(cert, "wb") as f:
                    f.write(self.cert_pem)
                with os.fdopen(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                    f.write(self._key_pem)
                ctx.load_cert_chain(cert, key)
            ctx.set_alpn_protocols(["http/1.1"])
            self._context = ctx
        return self._context


def enable_tls(endpoint: Any, tls: TwinTLS) -> str:
    """Serve ``endpoint`` (an ``HttpEndpoint``, before or after ``start()``) over TLS; returns its
    ``https://`` URL. Each accepted connection is wrapped, and its handshake runs in its handler
    thread (a slow client cannot stall the accept loop)."""
    server = endpoint._server
    ctx = tls.server_context()
    accept = server.get_request

    def get_request() -> tuple[Any, Any]:
        sock, addr = accept()
        return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    server.get_request = get_request
    base = server.RequestHandlerClass

    class TlsHandler(base):  # type: ignore[misc,valid-type]
        def setup(self) -> None:
            super().setup()  # applies the idle timeout to the socket first
            self.connection.do_handshake()

        def _peer_closed(self) -> bool:
            conn = self.connection
            try:
                if conn.pending():
                    return False
                readable, _, _ = select.select([conn], [], [], 0)
                if not readable:
                    return False
                # peek at the raw TCP stream (SSLSocket.recv refuses flags): b"" is the client's FIN
                return socket.socket.recv(conn, 1, socket.MSG_PEEK) == b""
            except (OSError, ValueError):
                return True

    server.RequestHandlerClass = TlsHandler
    return f"https://127.0.0.1:{endpoint.port}"


_SHARED: TwinTLS | None = None
_SHARED_LOCK = threading.Lock()


def shared_tls() -> TwinTLS:
    """One CA + certificate per process (making one costs ~0.4 s; every twin of a run can share it)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = TwinTLS()
        return _SHARED


def serve_tls(
    handler: Any, tls: TwinTLS | None = None, host: str = "127.0.0.1", port: int = 0
) -> tuple[Any, str]:
    """Start an ``HttpEndpoint`` serving ``handler`` over TLS; returns (endpoint, ``https://`` URL).

    Next to the plain-HTTP endpoint of the same handler (what in-process callers use), this is the
    ``server`` of the kubeconfigs handed to kubectl::

        handler = make_kube_handler(twin)
        kube = HttpEndpoint(handler).start()                 # kube_url, Python callers
        kube_tls, https_url = serve_tls(handler)             # kubeconfig server (+ CA data)
    """
    from ...httpserver import HttpEndpoint

    ep = HttpEndpoint(handler, host, port)
    url = enable_tls(ep, tls or shared_tls())
    ep.start()
    return ep, url


def kubeconfig_yaml(
    server: str,
    token: str,
    tls: TwinTLS | None = None,
    namespace: str = "default",
    context: str = "itbench-twin",
) -> str:
    """A kubeconfig with a bearer token (and the twin's CA when ``tls`` is given)."""
    from ....core.endpoints import kubeconfig_yaml as _kubeconfig

    return _kubeconfig(
        server, context=context, namespace=namespace, token=token, ca_data=tls.ca_data if tls else None
    )
