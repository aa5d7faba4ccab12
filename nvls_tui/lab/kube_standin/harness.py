"""Start and stop the stand-in: the server thread, the controller thread and a kubeconfig naming them."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from nvls_tui.lab.kube_standin import kubeconfig
from nvls_tui.lab.kube_standin.controller import Controller, Hook, Timing
from nvls_tui.lab.kube_standin.fixture import load_state
from nvls_tui.lab.kube_standin.server import Server
from nvls_tui.lab.kube_standin.store import Obj, Store


def _nothing(pod: Obj) -> None:
    """No process behind the pod."""


class StandIn:
    """A running stand-in API server: its store, controller, URL and kubeconfig path."""

    def __init__(self, store: Store, kubeconfig_path: str, *, port: int = 0, context: str = "nvls-standin",
                 on_create: Hook = _nothing, on_delete: Hook = _nothing, timing: Timing | None = None) -> None:
        self.store = store
        self.context = context
        self.server = Server(store, ("127.0.0.1", port))
        self.controller = Controller(store, on_create=on_create, on_delete=on_delete, timing=timing)
        self.kubeconfig = kubeconfig_path
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="kube-standin-server", daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.server.url

    def start(self) -> StandIn:
        """Run ``on_create`` for the pods already placed (their processes start), then serve and reconcile."""
        pods, _ = self.store.query("pods")
        for pod in pods:
            if pod.get("spec", {}).get("nodeName") and pod.get("status", {}).get("phase") == "Running":
                self.controller.on_create(pod)
        kubeconfig.write(self.kubeconfig, self.url, context=self.context)
        self._thread.start()
        self.controller.start()
        return self

    def stop(self) -> None:
        """End the watches, the controller and the server."""
        self.store.close()
        self.controller.stop()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def wait_for(self, condition: Callable[[Store], Any], timeout: float = 10.0) -> Any:
        """Wait until ``condition(store)`` is truthy (returning it), or raise TimeoutError.

        The condition runs under the store's lock: it must read the store, never call the server (a kubectl
        run from it would wait for that lock forever).
        """
        deadline = time.monotonic() + timeout
        while True:
            with self.store.cond:
                value = condition(self.store)
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the stand-in's state did not reach the condition in time")
                self.store.cond.wait(min(left, 0.05))

    def requests(self) -> list[tuple[str, str, str, bytes]]:
        """Every request served so far: (method, path?query, content type, body)."""
        return self.server.log.snapshot()


@contextlib.contextmanager
def running(state: dict[str, Any] | Store, directory: str | os.PathLike[str], *, port: int = 0,
            context: str = "nvls-standin", on_create: Hook = _nothing, on_delete: Hook = _nothing,
            timing: Timing | None = None) -> Iterator[StandIn]:
    """A stand-in serving ``state`` (a fixture document or a Store), its kubeconfig in ``directory``."""
    store = state if isinstance(state, Store) else load_state(state)
    standin = StandIn(store, os.path.join(os.fspath(directory), "kubeconfig"), port=port, context=context,
                      on_create=on_create, on_delete=on_delete, timing=timing)
    standin.start()
    try:
        yield standin
    finally:
        standin.stop()
