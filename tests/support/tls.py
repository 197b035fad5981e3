"""One TLS context per setting for the HTTP clients the tests build.

Each client (a provider, a vendor SDK, the proxy's upstream) builds its TLS context as it starts, loading the
machine's whole CA bundle: a tenth of a second a client, a fifth of some provider tests' time. The context a client
gets is the one it would build, built once per setting (verify, trust_env and the SSL_CERT_FILE and SSL_CERT_DIR it
reads) and shared, as clients of one process may share one; a context of the caller's own, or with a client
certificate, is built as before.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest


def built_once(create: Callable) -> Callable:
    """`create` (httpx's create_ssl_context), returning one context per setting."""
    made: dict[tuple, object] = {}

    def create_once(verify=True, cert=None, trust_env=True):
        if cert is not None or not isinstance(verify, bool):
            return create(verify=verify, cert=cert, trust_env=trust_env)
        key = (verify, trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = create(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    return create_once


@contextmanager
def contexts_built_once() -> Iterator[None]:
    """While open, httpx's and httpx2's transports build each TLS context setting once."""
    with pytest.MonkeyPatch.context() as patch:
        for package in ("httpx", "httpx2"):
            try:
                transports = importlib.import_module(f"{package}._transports.default")
            except ImportError:
                continue
            patch.setattr(transports, "create_ssl_context", built_once(transports.create_ssl_context))
        yield
