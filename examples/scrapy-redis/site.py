"""A generated web site to crawl: numbered pages, each linking to a seeded random choice of the
others, so that most links a crawler finds are duplicates. Serves on 127.0.0.1 on the port given
(0 picks a free one) and prints the port on its first line of output."""

import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGES = int(sys.argv[2]) if len(sys.argv) > 2 else 300
LINKS_PER_PAGE = 12


def links_of(page):
    rng = random.Random(page)
    # Page n always links to n+1, so every page is reachable from page 0; the rest repeat pages
    # the crawl has mostly seen already.
    chosen = [(page + 1) % PAGES] + [rng.randrange(PAGES) for _ in range(LINKS_PER_PAGE - 1)]
    return chosen


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        name = self.path.strip("/")
        if not (name.startswith("p") and name[1:].isdigit() and int(name[1:]) < PAGES):
            self.send_error(404)
            return
        page = int(name[1:])
        body = "".join(f'<a href="/p{n}">page {n}</a>\n' for n in links_of(page))
        data = f"<html><body><h1>page {page}</h1>\n{body}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
