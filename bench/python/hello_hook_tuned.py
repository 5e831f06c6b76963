#!/usr/bin/env python3
"""The same Hello sync (hello_hook.py), served as well as the standard
library allows: a thread per connection, HTTP/1.1 keep-alive with
Content-Length, Nagle off, a deep listen backlog, no per-request log line,
compact JSON.

    python3 bench/python/hello_hook_tuned.py PORT
"""
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hello_hook import sync  # noqa: E402  the very same logic


class Controller(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        observed = json.loads(self.rfile.read(int(self.headers.get("content-length"))))
        body = json.dumps(sync(observed["parent"], observed["children"]), separators=(",", ":")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Controller).serve_forever()
