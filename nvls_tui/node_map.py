"""A node-name map file (``--slurm-node-map``, ``--kube-node-map``): the target as the operator names it
on the left, the scheduler's or cluster's name for the node on the right.

One reader for both, so the two maps take the same format and fail with the same sentence.
"""

from __future__ import annotations

from nvls_tui.textsafe import one_line


def read_node_map(path: str, right: str) -> dict[str, str]:
    """One ``TARGET NAME`` pair per line; ``#`` starts a comment; blank lines are skipped.

    Args:
        path: the file.
        right: what the second word names, for the error (``SLURM_NODE``, ``K8S_NODE``).

    Raises:
        OSError: the file cannot be read. ValueError: a line is not two words (one sentence).
    """
    mapping = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 2:
                raise ValueError(f"{path}:{number}: expected 'TARGET {right}', got {one_line(line, 80)!r}")
            mapping[words[0]] = words[1]
    return mapping
