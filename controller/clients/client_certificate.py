"""A TLS client context holding a binding's client certificate and key (x509 bindings, mTLS).

Python's `ssl` loads a certificate chain and its key from files only. The binding's PEM texts are
written to anonymous in-memory files (`memfd_create`, Linux) and loaded from their
`/proc/self/fd/<n>` paths, so the private key never reaches a disk; elsewhere they go to files in
a private temporary directory (mode 0700, files 0600) that is removed right after loading.

Errors name the binding and what is wrong with it (a key that does not belong to the certificate,
a text that is no PEM), never the certificate's or the key's contents.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

from btp_gitops.controller.errors import ConfigurationError


def client_context(certificate: str, key: str, *, ca_file: str | None, what: str) -> ssl.SSLContext:
    """A default (server-verifying) context that presents `certificate` with `key`; `what` names
    the binding in errors ("the saas-registry binding")."""
    if "-----BEGIN" not in certificate or "-----BEGIN" not in key:
        raise ConfigurationError(f"{what}'s certificate and key must be PEM texts")
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigurationError(
            f"cannot load the CA bundle for callbacks: {type(error).__name__}"
        ) from error
    with _pem_files(certificate, key) as (certificate_path, key_path):
        try:
            context.load_cert_chain(certificate_path, key_path)
        except ssl.SSLError as error:
            raise ConfigurationError(
                f"{what}'s certificate and key cannot be used together ({_ssl_reason(error)})"
            ) from None
        except (OSError, ValueError) as error:
            raise ConfigurationError(
                f"{what}'s certificate and key cannot be loaded ({type(error).__name__})"
            ) from None
    return context


def _ssl_reason(error: ssl.SSLError) -> str:
    """OpenSSL's reason code (`KEY_VALUES_MISMATCH`, `NO_START_LINE`): names the problem only."""
    return str(error.reason or type(error).__name__)


@contextlib.contextmanager
def _pem_files(certificate: str, key: str) -> Iterator[tuple[str, str]]:
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        descriptors = [_memory_file(certificate), _memory_file(key)]
        try:
            yield f"/proc/self/fd/{descriptors[0]}", f"/proc/self/fd/{descriptors[1]}"
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
        return
    with tempfile.TemporaryDirectory(prefix="btp-gitops-mtls-") as directory:  # created 0700
        paths = (Path(directory) / "certificate.pem", Path(directory) / "key.pem")
        for path, text in zip(paths, (certificate, key), strict=True):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
        yield str(paths[0]), str(paths[1])


def _memory_file(text: str) -> int:
    descriptor = os.memfd_create("btp-gitops-binding", os.MFD_CLOEXEC)
    try:
        os.write(descriptor, text.encode("utf-8"))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor
