"""Model downloads in the package go through Python's urllib (hopgraph._download): a
local stand-in for the Hugging Face Hub serves a model's files, and `hopgraph-mcp
--embed-model owner/name` fetches them into the Hugging Face cache."""

import http.server
import socket
import subprocess
import threading

import pytest

from test_commands import script

REPO = "test-org/not-a-model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
WEIGHTS = bytes(range(256)) * 300  # not a model: the download is what is tested here
FILES = {
    "config.json": b'{"note": "not a BERT config"}',
    "tokenizer.json": b'{"note": "not a tokenizer"}',
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
}


class Hub(http.server.BaseHTTPRequestHandler):
    """`/{repo}/resolve/{revision}/{file}` as the Hub answers it: X-Repo-Commit for `main`,
    404 for files the model does not have, the tokenizer redirected to another path on the
    same host (as the Hub redirects some files to its `/api/resolve-cache/`), the weights to
    another host (`localhost` rather than 127.0.0.1: as the Hub sends large files to its
    CDN)."""

    seen = []

    def do_GET(self):
        Hub.seen.append((self.path, self.headers.get("Authorization")))
        prefix = f"/{REPO}/resolve/"
        if self.path == "/cdn/weights":
            return self.answer(200, WEIGHTS)
        if self.path == "/cache/tokenizer":
            return self.answer(200, FILES["tokenizer.json"])
        if not self.path.startswith(prefix):
            return self.answer(404, b"")
        revision, _, file = self.path[len(prefix):].partition("/")
        if file == "model.safetensors" and revision == COMMIT:
            port = self.server.server_address[1]
            return self.redirect(f"http://localhost:{port}/cdn/weights")
        if file == "tokenizer.json" and revision == COMMIT:
            return self.redirect("/cache/tokenizer")
        if file not in FILES or revision not in ("main", COMMIT):
            return self.answer(404, b"")
        return self.answer(200, FILES[file], commit=revision == "main")

    def redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def answer(self, status, body, commit=False):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if commit:
            self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    Hub.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def mcp_with_model(cache, endpoint):
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HUB_CACHE": str(cache),
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": "secret-token",
    }
    return subprocess.run(
        [script("hopgraph-mcp"), "--embed-model", REPO],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=env,
    )


def test_a_model_id_is_downloaded_through_python(tmp_path, hub):
    cache = tmp_path / "hf-cache"
    r = mcp_with_model(cache, hub)
    # Every file arrived; then the loader, not the download, refuses these files.
    assert r.returncode == 1, r.stderr
    assert "cannot load the embedding model" in r.stderr, r.stderr
    assert "no HTTP client" not in r.stderr and "three ways" not in r.stderr, r.stderr
    repo = cache / "models--test-org--not-a-model"
    assert (repo / "refs" / "main").read_text() == COMMIT
    snapshot = repo / "snapshots" / COMMIT
    assert (snapshot / "model.safetensors").read_bytes() == WEIGHTS
    for name, body in FILES.items():
        assert (snapshot / name).read_bytes() == body, name
    paths = [p for p, _ in Hub.seen]
    assert paths[0] == f"/{REPO}/resolve/main/config.json"
    assert f"/{REPO}/resolve/{COMMIT}/modules.json" in paths  # absent: 404, then skipped
    # The token goes to the Hub and where it redirects on its own host, never elsewhere.
    token = dict(Hub.seen)
    assert token[f"/{REPO}/resolve/{COMMIT}/tokenizer.json"] == "Bearer secret-token"
    assert token["/cache/tokenizer"] == "Bearer secret-token"
    assert token[f"/{REPO}/resolve/{COMMIT}/model.safetensors"] == "Bearer secret-token"
    assert token["/cdn/weights"] is None
    assert not list(repo.rglob("*.incomplete*")), "no temporary file left"


def test_an_unreachable_hub_is_one_clear_error(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = mcp_with_model(tmp_path / "hf-cache", f"http://127.0.0.1:{port}")
    assert r.returncode == 1
    assert "three ways" in r.stderr and REPO in r.stderr, r.stderr
