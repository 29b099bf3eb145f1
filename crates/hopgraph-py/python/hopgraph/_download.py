"""Model downloads for the native commands, through Python's ``urllib``.

The package's ``hopgraph`` and ``hopgraph-mcp`` commands fetch embedding models by name
(``--embed-model sentence-transformers/all-MiniLM-L6-v2``) from the Hugging Face Hub.
The native side decides what to fetch, where the cache is and checks every file; it asks
this module for the bytes (``src/download.rs``), so the package uses Python's own TLS,
certificates (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` where Python's defaults lack them) and
proxies (``https_proxy``, ``no_proxy``) rather than compiling a second HTTP client.
"""

import urllib.error
import urllib.parse
import urllib.request

from . import _native

# Seconds to wait for a connection, for an answer and for each read (as the built-in client).
TIMEOUT = 60


class Unreachable(Exception):
    """No answer came: name resolution, connection, TLS, proxy or timeout."""


def _origin(url):
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, parts.port or default


class _TokenToTheSameHost(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, keeping the token on a redirect to the same
    scheme, host and port (the Hub's own ``/api/resolve-cache/...``) and dropping it on
    any other (the CDN that large files come from), as ``huggingface_hub`` does."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        token = req.unredirected_hdrs.get("Authorization")
        if new is not None and token and _origin(req.full_url) == _origin(new.full_url):
            new.add_unredirected_header("Authorization", token)
        return new


_opener = urllib.request.build_opener(_TokenToTheSameHost)


def get(url, token):
    """GET ``url`` following redirects; ``token`` goes to ``url``'s host only.

    Returns ``(status, headers, body)`` for any answer, a 404 included: ``headers`` a list
    of ``(name, value)`` pairs, ``body`` an object with ``read(n)`` and ``close()``.
    Raises :class:`Unreachable` when there is no answer.
    """
    request = urllib.request.Request(
        url, headers={"User-Agent": "hopgraph/%s (Python urllib)" % _native.__version__}
    )
    if token:
        # urllib drops an unredirected header on a redirect; _TokenToTheSameHost puts it
        # back when the redirect stays on the same host.
        request.add_unredirected_header("Authorization", "Bearer " + token)
    try:
        response = _opener.open(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as answer:  # an answer with an error status
        return answer.code, list(answer.headers.items()), answer
    except (urllib.error.URLError, OSError) as e:  # TLS and timeouts are OSErrors too
        raise Unreachable(str(getattr(e, "reason", e))) from e
    return response.status, list(response.headers.items()), response
