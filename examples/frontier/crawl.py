"""A crawl of a generated multi-host site by worker processes sharing one sieved crawl frontier
(FQ.*), with redis-py's execute_command and no client library beyond it. One worker is killed
(SIGKILL) mid-crawl: the pages it had leased come back when their leases run out, and the others
fetch them. Then the crawl is checked: every page fetched, a page fetched twice only if the
killed worker had leased it, and the frontier left with nothing queued or leased.

    python3 crawl.py --port 6390 [--workers 4] [--hosts 3] [--pages 600] [--delay 5]

The site is --hosts HTTP servers on 127.0.0.1 (each its own politeness group,
http://127.0.0.1:<port>), --pages pages in all, each linking to twelve pages on any host, so
that most links a worker finds were seen before. Prints one JSON line of figures."""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

KEY = "crawl:frontier"
LINKS = 12
LINK = re.compile(rb'href="([^"]+)"')


def serve_site(hosts, pages):
    """Starts the site's servers in threads; returns their base URLs."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), None) for _ in range(hosts)]
    bases = [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            name = self.path.strip("/")
            if not (name.startswith("p") and name[1:].isdigit() and int(name[1:]) < pages):
                self.send_error(404)
                return
            page = int(name[1:])
            rng = random.Random(page)
            # Page n links to n+1 (so every page is reachable from p0) and to random others.
            targets = [(page + 1) % pages] + [rng.randrange(pages) for _ in range(LINKS - 1)]
            body = "".join(f'<a href="{bases[t % hosts]}/p{t}">{t}</a>\n' for t in targets)
            data = f"<html><body>{body}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    for server in servers:
        server.RequestHandlerClass = Handler
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return bases


def frontier_info(server):
    """FQ.INFO as a dict (redis-py may already have made one of the flat reply)."""
    info = server.execute_command("FQ.INFO", KEY)
    if not isinstance(info, dict):
        info = dict(zip(info[::2], info[1::2]))
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in info.items()}


def worker(port, number):
    """Pops, fetches, pushes the links found, acknowledges; stops once the frontier is empty."""
    server = redis.Redis(port=port)
    idle_since = None
    while True:
        leased = server.execute_command("FQ.POP", KEY, "COUNT", 2)
        if not leased:
            info = frontier_info(server)
            if info["Queued"] == 0 and info["Leased"] == 0:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > 1.0:
                    return
            else:
                idle_since = None
            time.sleep(0.01)
            continue
        idle_since = None
        for item_id, url in leased:
            server.rpush(f"crawl:leased:{number}", url)
            if number == 0:
                # The worker to be killed is slow, so that it is caught holding leases.
                time.sleep(0.02)
            with urllib.request.urlopen(url.decode(), timeout=10) as response:
                page = response.read()
            server.rpush("crawl:fetched", url)
            links = LINK.findall(page)
            if links:
                server.execute_command("FQ.PUSH", KEY, *links)
            server.execute_command("FQ.ACK", KEY, item_id)
            server.rpush(f"crawl:acked:{number}", url)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=6390)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--delay", type=int, default=5, help="ms between leases of one host")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.port, args.worker)
        return

    server = redis.Redis(port=args.port)
    server.delete(KEY, "crawl:fetched", *[f"crawl:{kind}:{n}" for kind in ("leased", "acked")
                                           for n in range(args.workers)])
    # A short lease, so that the killed worker's pages come back within the run.
    server.execute_command("FQ.RESERVE", KEY, 0.0001, 100000, "LEASE", 1500, "RETRIES", 5,
                           "DELAY", args.delay)
    bases = serve_site(args.hosts, args.pages)
    server.execute_command("FQ.PUSH", KEY, f"{bases[0]}/p0")
    started = time.monotonic()
    workers = [
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--port", str(args.port),
                          "--worker", str(n)])
        for n in range(args.workers)
    ]
    # Kill worker 0 once a quarter of the site is fetched, while it holds a lease.
    def holding():
        return server.llen("crawl:leased:0") > server.llen("crawl:acked:0")

    while workers[0].poll() is None and (
            server.llen("crawl:fetched") < args.pages // 4 or not holding()):
        time.sleep(0.001)
    if workers[0].poll() is None:
        os.kill(workers[0].pid, signal.SIGKILL)
    workers[0].wait()
    failed = [n for n, w in enumerate(workers[1:], 1) if w.wait() != 0]
    seconds = time.monotonic() - started
    if failed:
        sys.exit(f"workers {failed} failed")

    fetched = [url.decode() for url in server.lrange("crawl:fetched", 0, -1)]
    expected = {f"{bases[n % args.hosts]}/p{n}" for n in range(args.pages)}
    leased0 = {url.decode() for url in server.lrange("crawl:leased:0", 0, -1)}
    acked0 = {url.decode() for url in server.lrange("crawl:acked:0", 0, -1)}
    twice = {url for url in set(fetched) if fetched.count(url) > 1}
    info = frontier_info(server)
    problems = []
    if set(fetched) != expected:
        problems.append(f"{len(expected - set(fetched))} pages never fetched")
    if not twice <= leased0 - acked0:
        problems.append(f"fetched twice but not held by the killed worker: {twice - leased0}")
    if any(fetched.count(url) > 2 for url in twice):
        problems.append("a page fetched three times")
    if info["Done"] != args.pages:
        problems.append(f"{info['Done']} items done for {args.pages} pages")
    if info["Queued"] or info["Leased"] or info["Dead"]:
        problems.append(f"the frontier is not drained: {info}")
    print(json.dumps({
        "workers": args.workers,
        "hosts": args.hosts,
        "pages": len(set(fetched)),
        "fetches": len(fetched),
        "fetched_twice": len(twice),
        "killed_worker_unacknowledged": len(leased0 - acked0),
        "seen": info["Seen"],
        "done": info["Done"],
        "seconds": round(seconds, 2),
        "frontier_bytes": info["Memory"],
    }))
    if problems:
        sys.exit("; ".join(problems))


if __name__ == "__main__":
    main()
