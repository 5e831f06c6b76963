# What every e2e test's `answer(path, req)` is served by (tests/e2e/python_hooks.rs
# appends DIR, the answer and `serve(answer)`): POST, JSON in, JSON out.
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def serve(answer):
    class Hooks(BaseHTTPRequestHandler):
        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers['content-length'])))
            body = json.dumps(answer(self.path, req)).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Hooks).serve_forever()
