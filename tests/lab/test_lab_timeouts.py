"""Issue 25's "tests that assume the machine": with two other processes busy on the 2 cores, 8 lab tests
failed with "the command did not start within 20s". The 20 s was the product's default per-command
``--timeout`` (``BackendOptions.timeout``; the SSH backend's "did not start" bound is that timeout), which
the lab tests' nvls-tui commands inherited. Now a test marked ``lab`` gets a config file whose timeout is
``waiting.scaled(LAB_COMMAND_TIMEOUT)`` (tests/conftest.py), and the lab's own SSH backends take the same
scaled timeout. These tests hold the scaling to that, without booting a lab."""

from __future__ import annotations

import pytest

from nvls_tui.backends.base import BackendOptions
from nvls_tui.cli import build_parser, build_settings
from tests import waiting
from tests.conftest import LAB_COMMAND_TIMEOUT


def settings_of(*argv: str):
    return build_settings(build_parser().parse_args(list(argv)))


def test_the_products_default_per_command_timeout_is_the_20_s_the_lab_tests_ran_into():
    assert BackendOptions().timeout == 20.0
    assert settings_of("check", "sim:healthy/hgx01").timeout == 20.0  # a test not marked lab: the default


@pytest.mark.lab
@pytest.mark.xdist_group("lab-timeouts")  # every lab test names a lab group (tests/conftest.py); it boots none
def test_a_lab_tests_nvls_tui_commands_get_the_scaled_lab_timeout_from_its_config_file():
    settings = settings_of("check", "sim:healthy/hgx01")
    assert settings.timeout >= LAB_COMMAND_TIMEOUT > 20.0
    assert settings.source("timeout").startswith("config file ")
    assert settings_of("check", "--timeout", "7", "sim:healthy/hgx01").timeout == 7.0  # a test's own still wins


@pytest.mark.parametrize(("load", "cores", "factor", "expected"), [
    (0.5, 2, None, 60.0),   # an idle machine: the bound as written
    (6.0, 2, None, 180.0),  # three runnable processes a core: three times as long
    (6.0, 2, "2", 360.0),   # and the operator's factor on top
    (0.5, 2, "0.5", 60.0),  # a factor never shrinks a bound
])
def test_scaled_stretches_a_bound_by_the_load_per_core_and_the_operators_factor(monkeypatch, load, cores, factor,
                                                                                 expected):
    monkeypatch.setattr(waiting.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(waiting.os, "cpu_count", lambda: cores)
    if factor is None:
        monkeypatch.delenv(waiting.SCALE_ENV, raising=False)
    else:
        monkeypatch.setenv(waiting.SCALE_ENV, factor)
    assert waiting.scaled(60.0) == expected
