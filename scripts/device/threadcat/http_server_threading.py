# ThreadingHTTPServer runs do_POST on a thread per request: the compiled
# model, made on the main thread, is called from those threads.
# Expected on torch 2.11: TL001; the requests fail (AssertionError in
# cudagraph_trees' get_obj), exit 1.
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

model = torch.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead")
errors = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            y = model(torch.ones(8, device="cuda"))
            body, code = str(float(y.sum())).encode(), 200
        except Exception as e:  # the hazard, reported to the client
            errors.append(f"{type(e).__name__}: {e}")
            body, code = repr(e).encode(), 500
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def client(server, n):
    def one(_):
        try:
            with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{server.server_port}/", data=b"x")) as r:
                return r.status == 200
        except urllib.error.HTTPError:
            return False

    with ThreadPoolExecutor(4) as clients:  # four users at once
        ok = sum(clients.map(one, range(n)))
    print(f"{ok} of {n} requests answered")
    server.shutdown()


# No warm-up: as in a server that compiles at import, the first requests
# compile, warm up and record.
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=client, args=(server, 16)).start()
server.serve_forever()
if errors:
    print("first error:", errors[0].splitlines()[0][:160])
sys.exit(1 if errors else 0)
