"""A kubeconfig naming the stand-in (plain HTTP, no credentials), written 0600 as kubectl writes its own."""

from __future__ import annotations

import json
import os


def text(url: str, *, context: str = "nvls-standin", cluster: str = "nvls-standin",
         user: str = "nvls-standin") -> str:
    """The kubeconfig (JSON is YAML, and kubectl reads either)."""
    doc = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": url}}],
        "users": [{"name": user, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
        "current-context": context, "preferences": {},
    }
    return json.dumps(doc, indent=2) + "\n"


def write(path: str | os.PathLike[str], url: str, *, context: str = "nvls-standin") -> None:
    """Write the kubeconfig to ``path`` (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text(url, context=context))
