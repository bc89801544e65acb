"""A small site on loopback for the Crawlee example: page i links to pages 2i+1, 2i+2, i+1 and
the home page, so most links are duplicates that the request queue must drop. It counts every
fetch of every page; GET /stats (linked from nowhere) returns those counts as JSON."""

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(port, pages, delay):
    hits = {}
    lock = threading.Lock()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/stats":
                with lock:
                    body = json.dumps(hits).encode()
                return self.reply(body, "application/json")
            if not self.path.startswith("/page/"):
                return self.send_error(404)
            try:
                i = int(self.path[len("/page/"):])
            except ValueError:
                return self.send_error(404)
            if not 0 <= i < pages:
                return self.send_error(404)
            with lock:
                hits[self.path] = hits.get(self.path, 0) + 1
            if delay:
                time.sleep(delay)
            links = [j for j in (2 * i + 1, 2 * i + 2, i + 1, 0) if j < pages]
            anchors = "".join(f'<a href="/page/{j}">page {j}</a> ' for j in links)
            body = f"<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1>{anchors}</body></html>"
            self.reply(body.encode(), "text/html")

        def reply(self, body, kind):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Page)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each page takes")
    args = parser.parse_args()
    server = serve(args.port, args.pages, args.delay)
    print("serving", flush=True)
    server.serve_forever()
