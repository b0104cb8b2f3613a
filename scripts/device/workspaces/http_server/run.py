import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from engine import Engine

ENGINE = Engine()
errors = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            body = str(ENGINE(torch.randn(8, 64, device="cuda"))).encode()
            self.send_response(200)
        except Exception as e:
            errors.append(f"{type(e).__name__}: {str(e)[:160]}")
            body = b"error"
            self.send_response(500)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/"


def post():
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"x", method="POST"), timeout=120).read()
    except Exception:
        pass


# Clients at once, as a server meets them: each request on its own thread.
clients = [threading.Thread(target=post) for _ in range(4)]
for c in clients:
    c.start()
for c in clients:
    c.join()
server.shutdown()
print(f"{len(errors)} of {len(clients)} requests failed" + (f": {errors[0]}" if errors else ""))
sys.exit(1 if errors else 0)
