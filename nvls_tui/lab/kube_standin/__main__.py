"""``python -m nvls_tui.lab.kube_standin --state FILE [--port N] [--kubeconfig PATH]``: serve until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from nvls_tui.lab.kube_standin.fixture import FixtureError, load_state_file
from nvls_tui.lab.kube_standin.harness import StandIn


def main(argv: list[str] | None = None) -> int:
    """Serve a state file on 127.0.0.1 and write a kubeconfig naming it."""
    parser = argparse.ArgumentParser(prog="python -m nvls_tui.lab.kube_standin",
                                     description="A stand-in Kubernetes API server for nvls-tui's tests and lab "
                                                 "(plain HTTP on 127.0.0.1; no authentication).")
    parser.add_argument("--state", required=True, help="the cluster's starting state (JSON; docs/kubernetes.md)")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--kubeconfig", default="kubeconfig",
                        help="where to write the kubeconfig naming the server (default: ./kubeconfig)")
    parser.add_argument("--context", default="nvls-standin", help="the kubeconfig's context name")
    args = parser.parse_args(argv)
    try:
        store = load_state_file(args.state)
        standin = StandIn(store, os.path.abspath(args.kubeconfig), port=args.port, context=args.context)
    except FixtureError as err:
        print(f"kube_standin: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"kube_standin: cannot listen on 127.0.0.1:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    standin.start()
    print(f"serving {standin.url}; kubeconfig {standin.kubeconfig} (context {args.context}); Ctrl-C stops",
          flush=True)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        standin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
