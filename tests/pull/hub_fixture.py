#!/usr/bin/python3
"""A local stand-in for the Hugging Face Hub's HTTP API (tests/pull).

Serves one model repository built from a directory (a `tinylm synth`
checkpoint) plus a model card, a license and .gitattributes, with the Hub's
endpoints and headers:

  GET /api/models/{repo}/revision/{rev}   model info: sha, siblings, cardData
  GET /api/models/{repo}/tree/{commit}?recursive=true
                                          the tree, 4 entries a page, next
                                          page in a Link header
  GET /{repo}/resolve/{commit}/{path}     small files: 200, ETag = Git blob
                                          id; LFS files: 302 to the "CDN"
                                          with X-Linked-Etag / X-Linked-Size
  every answer from the hub carries X-Repo-Commit where the Hub sends it.

The CDN is a second server on another port, addressed as "localhost" while
the hub is "127.0.0.1": two host names, so a token that follows a redirect
shows in the request log. Both bind 127.0.0.1 on ephemeral ports.

Control (on the hub): GET /_fixture/fault/NAME selects one fault (see
FAULTS) and clears the log; GET /_fixture/log returns the request log.

With --tls CERT KEY the hub is also served over https on a third port
(the same state; its LFS files still redirect to the plain-http CDN).

Control (on the hub, either scheme): GET /_fixture/release lets a held
answer (fault "hold") go on.

Usage: hub_fixture.py SOURCE_DIR [--lifetime SECONDS] [--tls CERT KEY]
Prints one line "HUB <port> CDN <port>" (with --tls: "... HTTPS <port>")
when ready; exits after the lifetime (default 600 s) or on SIGTERM.

Hashes are computed here with hashlib (the oracle for what pull verifies):
a Git blob id is sha1(b"blob %d\\0" + content), an LFS oid is sha256.
"""
import hashlib
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

REPO = "tinylm-test/qwen3-tiny"
PAGE = 4
LFS_NAMES = ("model.safetensors", "tokenizer.json")
README = b"""---
license: apache-2.0
library_name: transformers
---
# qwen3-tiny

A synthetic Qwen3 checkpoint for tinylm's acquisition tests.
"""
README_NO_LICENSE = b"# qwen3-tiny\n\nNo license metadata here.\n"
README_V2 = README + b"\nRevised model card.\n"
LICENSE = b"Apache License\nVersion 2.0, January 2004\n(test fixture copy)\n"
GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\ntokenizer.json filter=lfs diff=lfs merge=lfs -text\n"


def empty_objects(megabytes):
    """[{},{},...] of about that many MB: the shape that drove pull to
    4.8 GB (issue 23.5)."""
    return b"[" + b"{}," * (megabytes * 1000 * 1000 // 3) + b"{}]"


FAULTS = {
    "none": "the good path",
    "commit_header": "config.json answers with another X-Repo-Commit",
    "etag_changed": "generation_config.json answers with another ETag",
    "changed_content": "config.json's bytes differ from the tree (same headers)",
    "branch_moved": "main moves to a second commit after the first resolution",
    "moved": "main names the second commit (README.md changed)",
    "moved_added": "main names a third commit (modeling_qwen3.py added, LICENSE gone)",
    "wrong_lfs_hash": "the CDN flips one byte of model.safetensors",
    "linked_size": "model.safetensors answers with another X-Linked-Size",
    "short_body": "config.json is 10 bytes shorter than the tree says",
    "long_body": "config.json is 10 bytes longer than the tree says",
    "drop": "the CDN closes the connection half way through model.safetensors",
    "redirect_loop": "model.safetensors redirects to itself",
    "lfs_pointer": "the CDN serves the LFS pointer instead of the content",
    "py_file": "the tree holds modeling_qwen3.py",
    "pickle": "the tree holds pytorch_model.bin",
    "symlink": "the tree holds a symlink entry",
    "submodule": "the tree holds a submodule entry",
    "traversal": "the tree holds ../config.json",
    "absolute": "the tree holds /etc/passwd",
    "pct_path": "the tree holds %2e%2e/config.json",
    "nested": "the tree holds sub/dir/config.json",
    "huge_size": "the tree declares model.safetensors at 2^45 bytes",
    "slow": "config.json's body never comes (headers only, then silence)",
    "http_401": "model info answers 401",
    "http_404": "model info answers 404",
    "http_429": "model info answers 429",
    "http_500": "model info answers 500",
    "non_json": "model info answers HTML",
    "no_license": "neither the model card nor the model info declares a license",
    "conflict": "generation_config.json's EOS set disagrees with config.json's",
    "cdn_token_check": "the good path; the log shows which hosts saw a token",
    "hold": "config.json is answered only after GET /_fixture/release",
    "ignore_range": "the CDN answers a Range request with 200 and the whole file",
    "slow_error": "model info answers 500 with an endless body, a byte every 0.2 s",
    "endless_error": "model info answers 500 with an endless body, as fast as it goes",
    "slow_json": "model info answers 200 with an endless JSON body, a byte every 0.2 s",
    "huge_tree": "the tree's first page is 63 MB of [{},{},...] (issue 23.5)",
    "huge_info": "model info answers 200 with 12 MB of [{},{},...] (under the size cap, over the value cap)",
    "hostile_error": "model info answers 404 with escape sequences and bytes that are not UTF-8 in X-Error-Message",
    "hostile_name": "the tree holds a name with escape sequences and C1/bidi controls",
    "moved_hostile": "main names a fourth commit that adds a file with that name",
}

# Server text made to attack a terminal: CSI, OSC (window title) ended by
# BEL, a lone C1 CSI byte (not UTF-8), a C1 CSI in UTF-8 (C2 9B), and in
# the tree name a right-to-left override.
HOSTILE_HEADER = "\x1b[31mgone\x1b]0;pwned\x07 \x9b2J \xc2\x9b2J end"
HOSTILE_NAME = "\x1b[2J\x1b]0;pwned\x07evil\u009b\u202etxt.json"


def blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def pointer(data):
    return (b"version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
            % (hashlib.sha256(data).hexdigest().encode(), len(data)))


class Repo:
    """One commit: files, tree entries, the commit id."""

    def __init__(self, files):
        self.files = dict(sorted(files.items()))
        self.entries = []
        for path, data in self.files.items():
            e = {"type": "file", "size": len(data), "path": path}
            if path in LFS_NAMES:
                p = pointer(data)
                e["oid"] = blob_id(p)
                e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                            "pointerSize": len(p)}
            else:
                e["oid"] = blob_id(data)
            self.entries.append(e)
        manifest = json.dumps(self.entries, sort_keys=True).encode()
        self.commit = hashlib.sha1(b"commit " + manifest).hexdigest()
        self.by_sha = {hashlib.sha256(d).hexdigest(): d for d in self.files.values()}


def build(source, fault):
    files = {}
    for name in sorted(os.listdir(source)):
        with open(os.path.join(source, name), "rb") as f:
            files[name] = f.read()
    gen = json.loads(files["generation_config.json"])
    if fault != "conflict":
        # synth mirrors the published EOS disagreement; the good path's
        # generation config agrees with config.json.
        gen["eos_token_id"] = json.loads(files["config.json"])["eos_token_id"]
    files["generation_config.json"] = (json.dumps(gen, indent=2) + "\n").encode()
    files["README.md"] = README_NO_LICENSE if fault == "no_license" else README
    files["LICENSE"] = LICENSE
    files[".gitattributes"] = GITATTRIBUTES
    a = Repo(files)
    files_b = dict(files)
    files_b["README.md"] = README_V2
    b = Repo(files_b)
    files_c = dict(files)
    files_c["modeling_qwen3.py"] = b"import os\n"
    del files_c["LICENSE"]
    files_d = dict(files)
    files_d[HOSTILE_NAME] = b"{}\n"
    return a, b, Repo(files_c), Repo(files_d)


class State:
    def __init__(self, source):
        self.source = source
        self.lock = threading.Lock()
        self.log = []
        self.release = threading.Event()
        self.set_fault("none")

    def set_fault(self, fault):
        with self.lock:
            self.fault = fault
            self.a, self.b, self.c, self.d = build(self.source, fault)
            self.resolutions = 0
            self.log = []
            self.release.set()  # whatever a former fault held goes on
            self.release = threading.Event()

    def repo_at(self, commit):
        for r in (self.a, self.b, self.c, self.d):
            if r.commit == commit:
                return r
        return None


STATE = None
PORTS = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name_ = "hub"

    def log_message(self, *args):
        pass

    def base(self):
        """This server's own origin (the hub is served over http and, with
        --tls, over https too)."""
        return "%s://127.0.0.1:%d" % (self.server.scheme, self.server.server_address[1])

    def endless(self, code, headers, chunk, pause):
        """Headers promising a huge body, then chunk after chunk until the
        client hangs up (or a minute passes)."""
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(1 << 40))
        self.end_headers()
        end = time.time() + 60
        try:
            while time.time() < end:
                self.wfile.write(chunk)
                self.wfile.flush()
                if pause:
                    time.sleep(pause)
        except OSError:
            pass
        self.close_connection = True

    def record(self):
        with STATE.lock:
            STATE.log.append({"server": self.server_name_, "scheme": self.server.scheme,
                              "path": self.path,
                              "auth": self.headers.get("Authorization"),
                              "range": self.headers.get("Range")})

    def send(self, code, body=b"", headers=(), length=None):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def json(self, obj, headers=()):
        self.send(200, json.dumps(obj).encode(), [("Content-Type", "application/json")] + list(headers))

    def error(self, code, message):
        self.send(code, json.dumps({"error": message}).encode(),
                  [("Content-Type", "application/json"), ("X-Error-Message", message)])


class Hub(Handler):
    server_name_ = "hub"

    def do_GET(self):
        url = urlsplit(self.path)
        parts = url.path.split("/")
        if url.path.startswith("/_fixture/fault/"):
            name = parts[3]
            if name not in FAULTS:
                return self.error(400, "unknown fault")
            STATE.set_fault(name)
            return self.json({"fault": name, "commit": STATE.a.commit, "moved_to": STATE.b.commit})
        if url.path == "/_fixture/log":
            with STATE.lock:
                return self.json(STATE.log)
        if url.path == "/_fixture/release":
            STATE.release.set()
            return self.json({"released": True})
        self.record()
        fault = STATE.fault
        repo_prefix = "/api/models/" + REPO + "/"
        if url.path.startswith(repo_prefix + "revision/"):
            if fault.startswith("http_"):
                return self.error(int(fault[5:]), "injected " + fault)
            if fault == "non_json":
                return self.send(200, b"<html>maintenance</html>", [("Content-Type", "text/html")])
            if fault == "slow_error":
                return self.endless(500, [("X-Error-Message", "overloaded")], b"x", 0.2)
            if fault == "endless_error":
                return self.endless(500, [("X-Error-Message", "overloaded")], b"x" * 65536, 0)
            if fault == "slow_json":
                return self.endless(200, [("Content-Type", "application/json")], b" ", 0.2)
            if fault == "hostile_error":
                return self.send(404, b"{}", [("X-Error-Message", HOSTILE_HEADER)])
            if fault == "huge_info":
                try:
                    return self.send(200, empty_objects(12), [("Content-Type", "application/json")])
                except OSError:
                    return None
            rev = unquote(url.path[len(repo_prefix + "revision/"):])
            with STATE.lock:
                moved = (fault == "branch_moved" and STATE.resolutions > 0) or fault == "moved"
                if rev == "main":
                    STATE.resolutions += 1
            a, b = STATE.a, STATE.b
            if rev == "main":
                repo = (STATE.c if fault == "moved_added" else STATE.d if fault == "moved_hostile"
                        else b if moved else a)
            elif rev in ("v1", a.commit, a.commit[:7]):
                repo = a
            elif rev in ("v2", b.commit):
                repo = b
            else:
                return self.error(404, "Revision Not Found")
            info = {"id": REPO, "sha": repo.commit,
                    "siblings": [{"rfilename": p} for p in repo.files],
                    "cardData": {} if fault == "no_license" else {"license": "apache-2.0"}}
            return self.json(info)
        if url.path.startswith(repo_prefix + "tree/"):
            commit = url.path[len(repo_prefix + "tree/"):]
            repo = STATE.repo_at(commit)
            if repo is None:
                return self.error(404, "Revision Not Found")
            entries = [dict(e) for e in repo.entries]
            extra = {
                "py_file": {"type": "file", "oid": "0" * 40, "size": 10, "path": "modeling_qwen3.py"},
                "pickle": {"type": "file", "oid": "0" * 40, "size": 10, "path": "pytorch_model.bin"},
                "symlink": {"type": "symlink", "oid": "0" * 40, "size": 10, "path": "weights.safetensors"},
                "submodule": {"type": "submodule", "oid": "0" * 40, "size": 0, "path": "vendor"},
                "traversal": {"type": "file", "oid": "0" * 40, "size": 10, "path": "../config.json"},
                "absolute": {"type": "file", "oid": "0" * 40, "size": 10, "path": "/etc/passwd"},
                "pct_path": {"type": "file", "oid": "0" * 40, "size": 10, "path": "%2e%2e/config.json"},
                "nested": {"type": "file", "oid": "0" * 40, "size": 10, "path": "sub/dir/config.json"},
                "hostile_name": {"type": "file", "oid": "0" * 40, "size": 10, "path": HOSTILE_NAME},
            }.get(fault)
            if extra is not None:
                entries.insert(len(entries) // 2, extra)
            if fault == "huge_tree":
                try:  # pull hangs up once it has read what it allows
                    return self.send(200, empty_objects(63), [("Content-Type", "application/json")])
                except OSError:
                    return None
            if fault == "huge_size":
                for e in entries:
                    if e["path"] == "model.safetensors":
                        e["size"] = e["lfs"]["size"] = 1 << 45
            start = int(parse_qs(url.query).get("cursor", ["0"])[0])
            page = entries[start:start + PAGE]
            headers = []
            if start + PAGE < len(entries):
                nxt = "%s%s?recursive=true&cursor=%d" % (self.base(), url.path, start + PAGE)
                headers.append(("Link", '<%s>; rel="next"' % nxt))
            return self.json(page, headers)
        prefix = "/" + REPO + "/resolve/"
        if url.path.startswith(prefix):
            commit, _, path = url.path[len(prefix):].partition("/")
            path = unquote(path)
            repo = STATE.repo_at(commit)
            if repo is None or path not in repo.files:
                return self.error(404, "Entry Not Found")
            data = repo.files[path]
            entry = next(e for e in repo.entries if e["path"] == path)
            headers = [("X-Repo-Commit", repo.commit)]
            if fault == "commit_header" and path == "config.json":
                headers = [("X-Repo-Commit", STATE.b.commit if repo is STATE.a else STATE.a.commit)]
            if "lfs" in entry:
                sha = entry["lfs"]["oid"]
                size = entry["size"]
                if fault == "linked_size" and path == "model.safetensors":
                    size += 1
                headers += [("X-Linked-Etag", '"%s"' % sha), ("X-Linked-Size", str(size)),
                            ("ETag", '"%s"' % entry["oid"])]
                loc = "http://localhost:%d/cdn/%s?X-Amz-Signature=fixture" % (PORTS["cdn"], sha)
                if fault == "redirect_loop" and path == "model.safetensors":
                    loc = self.base() + self.path
                headers.append(("Location", loc))
                return self.send(302, b"", headers)
            etag = entry["oid"]
            if fault == "etag_changed" and path == "generation_config.json":
                etag = blob_id(data + b" ")
            headers.append(("ETag", '"%s"' % etag))
            if path == "config.json":
                if fault == "hold":
                    STATE.release.wait(60)
                if fault == "changed_content":
                    data = data.replace(b"{", b"{ ", 1)[:len(data)]
                elif fault == "short_body":
                    data = data[:-10]
                elif fault == "long_body":
                    data = data + b" " * 10
                elif fault == "slow":
                    self.send_response(200)
                    for k, v in headers:
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.flush()
                    time.sleep(6)
                    self.close_connection = True
                    return
            return self.send(200, data, headers)
        return self.error(404, "Not Found")


class Cdn(Handler):
    server_name_ = "cdn"

    def do_GET(self):
        self.record()
        url = urlsplit(self.path)
        sha = url.path.rpartition("/")[2]
        data = None
        for r in (STATE.a, STATE.b):
            data = r.by_sha.get(sha, data)
        if data is None:
            return self.error(404, "NoSuchKey")
        fault = STATE.fault
        is_model = len(data) > 1 << 20
        if fault == "wrong_lfs_hash" and is_model:
            data = data[:1000] + bytes([data[1000] ^ 1]) + data[1001:]
        if fault == "lfs_pointer" and is_model:
            data = pointer(data)
        start = 0
        rng = self.headers.get("Range")
        if fault == "ignore_range":
            rng = None  # as a server without range support: 200, everything
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
        body = data[start:]
        if fault == "drop" and is_model:
            # Promise the whole body, send half of it, hang up.
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if start:
            return self.send(206, body, [("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))])
        return self.send(200, body)


def main():
    global STATE
    source = sys.argv[1]
    lifetime = 600.0
    if "--lifetime" in sys.argv:
        lifetime = float(sys.argv[sys.argv.index("--lifetime") + 1])
    STATE = State(source)
    hub = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), Cdn)
    hub.daemon_threads = cdn.daemon_threads = True
    hub.scheme = cdn.scheme = "http"
    PORTS["hub"] = hub.server_address[1]
    PORTS["cdn"] = cdn.server_address[1]
    servers = [hub, cdn]
    line = "HUB %d CDN %d" % (PORTS["hub"], PORTS["cdn"])
    if "--tls" in sys.argv:
        i = sys.argv.index("--tls")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[i + 1], sys.argv[i + 2])
        tls = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
        tls.daemon_threads = True
        tls.scheme = "https"
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        servers.append(tls)
        line += " HTTPS %d" % tls.server_address[1]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(line, flush=True)
    time.sleep(lifetime)


if __name__ == "__main__":
    main()
