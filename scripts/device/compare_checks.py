"""Do two ``check --json`` outputs of the same machine agree? (local/NVML vs SSH, on a lent GPU machine)

    python3 scripts/device/compare_checks.py LOCAL.json SSH.json

Prints one line per compared fact and ``AGREE`` or ``DISAGREE`` last; exits 0 when they agree.
"""

from __future__ import annotations

import json
import sys


def facts(path: str) -> dict:
    (node,) = json.load(open(path))["nodes"]
    return {
        "verdict": node["verdict"],
        "platform": node["platform"],
        "findings": sorted((f["code"], f["severity"], f.get("section") or "") for f in node["findings"]),
        "gpus": [(g["index"], g["bus_id"], g["uuid"], g["fabric"]["state"], g["fabric"]["status"],
                  g["fabric"]["clique_id"], g["fabric"]["cluster_uuid"]) for g in node["gpus"]],
        # Holders that live through both reads (a watch loop's nvidia-smi comes and goes).
        "holders": sorted((h["pid"], h["ppid"], h["user"], " ".join((h["start_time"] or "").split()), h["command"],
                           h["kind"], h["unit"], h["pod"]) for h in node["holders"] if h["kind"] == "cuda-app"),
        "missing": sorted((m["section"], m["reason"]) for m in node.get("missing", [])),
    }


def main() -> int:
    local, ssh = facts(sys.argv[1]), facts(sys.argv[2])
    same = True
    for key in local:
        ok = local[key] == ssh[key]
        same &= ok
        print(f"{'same' if ok else 'DIFFERENT'} {key}: local={local[key]!r}" + ("" if ok else f" ssh={ssh[key]!r}"))
    print("AGREE" if same else "DISAGREE")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
