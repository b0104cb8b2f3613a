"""Shared by the values scripts: records what a worker thread died of, and
says in one line what happened (exit status 1 when a thread failed)."""
import sys
import threading

failed = []


def _hook(args):
    msg = str(args.exc_value).strip().splitlines()
    failed.append(f"{args.exc_type.__name__}: {msg[0][:160] if msg else ''}")


threading.excepthook = _hook


def verdict():
    if failed:
        print("FAILED in thread:", failed[0])
        sys.exit(1)
    print("ok: the thread's calls ran")
