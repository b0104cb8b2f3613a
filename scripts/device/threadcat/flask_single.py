# With threaded=False Flask's development server runs every view on the
# thread of app.run, here the main thread, where the compiled model was
# made. Expected: no TL001; every request answered, exit 0.
import os
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import torch
from flask import Flask

app = Flask(__name__)
model = torch.compile(torch.nn.Linear(8, 8).cuda(), mode="reduce-overhead")
errors = []


@app.route("/predict", methods=["POST"])
def predict():
    try:
        return str(float(model(torch.ones(8, device="cuda")).sum()))
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
        raise


def client(n):
    threading.Event().wait(3)  # app.run has no started signal
    def one(_):
        try:
            with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8768/predict", data=b"")) as r:
                return r.status == 200
        except urllib.error.HTTPError:
            return False

    with ThreadPoolExecutor(4) as clients:  # four users at once
        ok = sum(clients.map(one, range(n)))
    print(f"{ok} of {n} requests answered", flush=True)
    if errors:
        print("first error:", errors[0].splitlines()[0][:160], flush=True)
    os._exit(1 if errors else 0)  # app.run has no stop either


# No warm-up: as in a server that compiles at import, the first requests
# compile, warm up and record.
threading.Thread(target=client, args=(16,)).start()
app.run(host="127.0.0.1", port=8768, threaded=False)
