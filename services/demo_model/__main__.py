"""`python -m services.demo_model`: serve the scripted model until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from services.demo_model.demo import demo_reply
from services.demo_model.server import ScriptedModel, echo


def main(argv: list[str] | None = None) -> int:
    """Serve the scripted model (the demo assistant with --demo, else an echo) until a signal."""
    parser = argparse.ArgumentParser(prog="python -m services.demo_model",
                                     description="The scripted OpenAI-compatible model (offline demo).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--demo", action="store_true", help="answer as the offline demo assistant")
    args = parser.parse_args(argv)
    model = ScriptedModel(port=args.port, host=args.host, default=demo_reply if args.demo else echo)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    model.start()
    print(f"scripted demo model listening on {model.base_url}", flush=True)
    while not done.wait(1):
        pass
    model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
