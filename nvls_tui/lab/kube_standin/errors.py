"""The API's failures as the real API server writes them: a ``kind: Status`` body and its HTTP code.

kubectl prints ``Error from server (REASON): MESSAGE`` from exactly these fields, so the reason and the
message follow the real server's wording (k8s.io/apimachinery's ``errors`` package builds the same).
"""

from __future__ import annotations

from typing import Any

#: HTTP code -> the StatusReason the real server gives it.
REASONS: dict[int, str] = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
}


class ApiError(Exception):
    """A request the API refuses; ``body`` is the Status object the server answers with."""

    def __init__(self, code: int, message: str, *, reason: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.body: dict[str, Any] = status(code, message, reason=reason or REASONS.get(code, "Unknown"),
                                           details=details)


def status(code: int, message: str | None = None, *, reason: str | None = None,
           details: dict[str, Any] | None = None, success: bool = False) -> dict[str, Any]:
    """A ``v1 Status`` object; fields left out are omitted, as the real server omits empty ones."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Success" if success else "Failure"}
    if message is not None:
        body["message"] = message
    if reason is not None:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def qualified(resource: str, group: str) -> str:
    """``pods`` for the core group, ``poddisruptionbudgets.policy`` for another (as messages name them)."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """404: ``nodes "gpu99" not found``."""
    return ApiError(404, f'{qualified(resource, group)} "{name}" not found',
                    details={"name": name, "group": group, "kind": resource} if group
                    else {"name": name, "kind": resource})


def conflict(resource: str, name: str, group: str = "") -> ApiError:
    """409 on a stale resourceVersion, worded as the registry's optimistic-concurrency failure."""
    return ApiError(409, f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": the object '
                    "has been modified; please apply your changes to the latest version and try again",
                    details={"name": name, "group": group, "kind": resource} if group
                    else {"name": name, "kind": resource})


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, message)


def method_not_allowed() -> ApiError:
    """405 for a verb the resource does not serve."""
    return ApiError(405, "the server does not allow this method on the requested resource")


def unknown_path() -> ApiError:
    """404 for a path the server does not serve (no name in it): kubectl words this one itself."""
    return ApiError(404, "the server could not find the requested resource", details={})


def expired(message: str) -> ApiError:
    """410 Gone: a watch from a resourceVersion older than the server keeps."""
    return ApiError(410, message, reason="Expired")
