"""A language server that speaks only torchlsp's site contract, for the
editor tests of the site wiring while the real server may not have it yet.

    python3 site_server.py TARGET=SITE_DIR [TARGET=SITE_DIR ...]

The first target is active. The contract (the same as torchlsp's):
- workspace/executeCommand "torchlsp.site" with optional {"target": NAME}
  returns {"target", "python", "path", "packages", "bytes"};
- the notification "torchlsp/site" {"target": NAME, "path": SITE_DIR} is sent
  once the client is initialized and whenever the active target changes
  (path "" when the target has none);
- "torchlsp.selectTarget" {"target": NAME} switches targets; without a name
  it lists them: {"targets": [...], "default": NAME}.
Standard library only; stdin/stdout framed as LSP."""

import json
import os
import sys


def read_message(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    if length is None:
        return None
    return json.loads(stream.read(length))


def write_message(stream, msg):
    body = json.dumps(msg).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def main():
    sites = {}
    order = []
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        sites[name] = path
        order.append(name)
    if not order:
        sys.exit("usage: site_server.py TARGET=SITE_DIR ...")
    active = order[0]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def site_of(name):
        path = sites.get(name, "")
        size = 0
        for root, _, files in os.walk(path) if path else ():
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        return {"target": name, "python": sys.executable, "path": path, "packages": ["torch"], "bytes": size}

    def announce():
        write_message(stdout, {"jsonrpc": "2.0", "method": "torchlsp/site", "params": {"target": active, "path": sites.get(active, "")}})

    while True:
        msg = read_message(stdin)
        if msg is None:
            return
        method, mid = msg.get("method"), msg.get("id")
        params = msg.get("params") or {}
        if method is None:
            continue  # a reply to something we never ask
        result = None
        if method == "initialize":
            result = {
                "capabilities": {"executeCommandProvider": {"commands": ["torchlsp.site", "torchlsp.selectTarget"]}},
                "serverInfo": {"name": "site_server.py"},
            }
        elif method == "initialized":
            announce()
        elif method == "workspace/executeCommand":
            args = (params.get("arguments") or [None])[0] or {}
            name = args.get("target", "") if isinstance(args, dict) else ""
            if params.get("command") == "torchlsp.site":
                result = site_of(name or active)
            elif params.get("command") == "torchlsp.selectTarget":
                if name:
                    active = name
                    announce()
                result = {"targets": sorted(order), "default": active}
        elif method == "exit":
            return
        if mid is not None:
            write_message(stdout, {"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
