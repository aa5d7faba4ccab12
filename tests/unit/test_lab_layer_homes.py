"""A lab node's layer makes its homes its own (issue 37 item 1), without booting a lab: ``/root`` and ``/home``
opaque over the host's, root's start-up files the image's, and a clear refusal where the lab's folder cannot
hold an overlay's opaque mark."""

from __future__ import annotations

import errno
import os

import pytest

from nvls_tui.lab import lifecycle
from nvls_tui.lab.image import ROOT_BASHRC, ROOT_PROFILE
from nvls_tui.lab.machine import LabError, LabNode

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="trusted.* extended attributes need root")


def layer(tmp_path) -> tuple[LabNode, object]:
    node = LabNode("gpu05", "127.0.9.10", str(tmp_path / "nodes" / "gpu05"))
    return node, tmp_path / "nodes" / "gpu05" / "upper"


def test_the_nodes_homes_are_opaque_and_roots_start_up_files_are_the_images(tmp_path):
    node, upper = layer(tmp_path)
    lifecycle._write_layer(node, "ssh-ed25519 AAAA lab\n", "seed-incident")
    for folder, mode in (("root", 0o700), ("home", 0o755)):
        assert os.getxattr(upper / folder, "trusted.overlay.opaque") == b"y"
        assert (upper / folder).stat().st_mode & 0o777 == mode
    assert (upper / "root" / ".bashrc").read_text() == ROOT_BASHRC
    assert (upper / "root" / ".profile").read_text() == ROOT_PROFILE
    assert "pyenv" not in ROOT_BASHRC + ROOT_PROFILE
    assert (upper / "root" / ".ssh" / "authorized_keys").read_text() == "ssh-ed25519 AAAA lab\n"


def test_a_folder_without_trusted_attributes_is_refused_in_a_sentence(tmp_path, monkeypatch):
    def refuse(*_args):
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(lifecycle.os, "setxattr", refuse)
    node, _upper = layer(tmp_path)
    with pytest.raises(LabError, match=r"^gpu05: cannot give it a /root of its own: .* without trusted extended "
                                       r"attributes \(Operation not supported\); give a --dir elsewhere$"):
        lifecycle._write_layer(node, "ssh-ed25519 AAAA lab\n", "seed-incident")
