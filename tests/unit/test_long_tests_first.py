"""Tests marked ``long`` are handed out first of their tier (tests/conftest.py): in alphabetical order the
1,024-node fleet of test_sim_scenarios.py and the 300 examples of test_report_bad_lines.py came last, and one
worker ran them alone for 5-10 s after the others had finished."""

from __future__ import annotations

from tests.conftest import hand_out_order


def test_a_long_test_goes_before_the_short_tests_of_its_tier_and_after_every_test_of_an_earlier_tier():
    tests = [("tests/unit/test_a.py::short", set(), False),
             ("tests/unit/test_z.py::long", set(), True),
             ("tests/sshd/test_s.py::short", {"ssh"}, False),
             ("tests/lab/test_l.py::short", {"lab"}, False),
             ("tests/sshd/test_t.py::long", {"ssh"}, True)]
    order = [name for name, marks, long in sorted(tests, key=lambda t: hand_out_order(t[1], t[2]))]
    assert order == ["tests/lab/test_l.py::short",
                     "tests/sshd/test_t.py::long", "tests/sshd/test_s.py::short",
                     "tests/unit/test_z.py::long", "tests/unit/test_a.py::short"]
