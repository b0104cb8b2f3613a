# FastAPI awaits an async def endpoint on uvicorn's event loop, which runs
# on the main thread, where the compiled model was made. Expected:
# no TL001; every request answered, exit 0.
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import torch
import uvicorn
from fastapi import FastAPI

app = FastAPI()
model = torch.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead")
errors = []


@app.post("/predict")
async def predict():
    try:
        return float(model(torch.ones(8, device="cuda")).sum())
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
        raise


def client(server, n):
    while not server.started:
        threading.Event().wait(0.05)
    def one(_):
        try:
            with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8766/predict", data=b"")) as r:
                return r.status == 200
        except urllib.error.HTTPError:
            return False

    with ThreadPoolExecutor(4) as clients:  # four users at once
        ok = sum(clients.map(one, range(n)))
    print(f"{ok} of {n} requests answered")
    server.should_exit = True


# No warm-up: as in a server that compiles at import, the first requests
# compile, warm up and record.
server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=8766, log_level="critical"))
threading.Thread(target=client, args=(server, 16)).start()
server.run()
if errors:
    print("first error:", errors[0].splitlines()[0][:160])
sys.exit(1 if errors else 0)
