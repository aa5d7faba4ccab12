"""tests/lab_slots.py: the scheduler that keeps at most N workers in lab groups at once, driven with fake workers
through xdist's own scheduling calls (add_node, add_node_collection, schedule, mark_test_complete)."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

from tests.lab_slots import LONGEST_LABS, LabSlotScheduling, is_lab, next_scope, order_labs


class FakeWorker:
    """What the scheduler calls on a worker: the tests it was sent, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes) -> None:
        self.sent.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


def _collection() -> list[str]:
    """Five lab groups (the known long ones and one unknown), an SSH group and forty single tests."""
    ids = [f"tests/lab/test_slurm.py::t{i}@lab-slurm" for i in range(3)]
    ids += [f"tests/lab/test_x.py::t{i}@lab-x" for i in range(6)]  # most tests, unknown: after the known ones
    ids += [f"tests/lab/test_auto.py::t{i}@lab-autopilot" for i in range(2)]
    ids += [f"tests/lab/test_lab.py::t{i}@lab" for i in range(4)]
    ids += [f"tests/lab/test_kube.py::t{i}@lab-kube" for i in range(3)]
    ids += [f"tests/sshd/test_rig.py::t{i}@sshd-rig" for i in range(5)]
    ids += [f"tests/unit/test_u{i}.py::t" for i in range(40)]
    return ids


def _run(workers: int, slots: int) -> tuple[list[FakeWorker], list[int], dict[str, list[str]]]:
    """Schedule the collection on ``workers`` fake workers and run it to the end, one test per worker in turn.

    Returns the workers, the most workers that held unfinished lab tests at once while work that is not a lab
    group was still queued, and the scopes each worker ran, in order."""
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=True))
    sched = LabSlotScheduling(config, slots=slots)
    nodes = [FakeWorker(f"gw{i}") for i in range(workers)]
    collection = _collection()
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    done = [0] * workers
    most: list[int] = []
    ran: dict[str, list[str]] = {n.name: [] for n in nodes}
    while any(done[i] < len(n.sent) for i, n in enumerate(nodes)):
        for i, node in enumerate(nodes):
            if done[i] >= len(node.sent):
                continue
            index = node.sent[done[i]]
            done[i] += 1
            scope = sched._split_scope(collection[index])
            if not ran[node.name] or ran[node.name][-1] != scope:
                ran[node.name].append(scope)
            holding = sum(any(is_lab(s) and not all(t.values()) for s, t in work.items())
                          for work in sched.assigned_work.values())
            if any(not is_lab(s) for s in sched.workqueue):
                most.append(holding)
            sched.mark_test_complete(node, index)
    assert sorted(i for n in nodes for i in n.sent) == list(range(len(collection))), "every test once"
    return nodes, most, ran


def test_no_more_than_the_slots_hold_labs_while_other_work_waits():
    _, most, ran = _run(workers=4, slots=2)
    assert max(most) == 2
    on_labs = [name for name, scopes in ran.items() if any(is_lab(s) for s in scopes)]
    assert len(on_labs) == 2, ran


def test_the_other_workers_start_on_work_that_is_not_a_lab():
    _, _, ran = _run(workers=4, slots=2)
    firsts = sorted(scopes[0] for scopes in ran.values())
    assert firsts[:2] == ["lab-autopilot", "lab-slurm"], firsts
    assert not any(is_lab(s) for s in firsts[2:]), firsts


def test_each_group_runs_whole_on_one_worker():
    nodes, _, ran = _run(workers=3, slots=1)
    for group in ("lab-slurm", "lab-x", "lab-autopilot", "lab", "lab-kube", "sshd-rig"):
        assert sum(group in scopes for scopes in ran.values()) == 1, (group, ran)


def test_the_labs_go_out_longest_first_then_by_count():
    queue = OrderedDict((s, {f"{s}::t{i}": False for i in range(n)})
                        for s, n in [("tests/unit/a.py::t", 1), ("lab-x", 6), ("lab-y", 9), ("lab-kube", 3),
                                     ("lab-slurm", 3), ("sshd-rig", 5), ("lab", 4)])
    order_labs(queue)
    assert list(queue) == ["lab-slurm", "lab", "lab-kube", "lab-y", "lab-x", "tests/unit/a.py::t", "sshd-rig"]
    assert LONGEST_LABS[0] == "lab-slurm"


def test_a_worker_is_never_left_without_work():
    assert next_scope(["lab-a", "u1"], labs_elsewhere=2, slots=2) == "u1"
    assert next_scope(["lab-a", "u1"], labs_elsewhere=1, slots=2) == "lab-a"
    assert next_scope(["lab-a", "lab-b"], labs_elsewhere=2, slots=2) == "lab-a"
    assert not is_lab("labels.py::t") and is_lab("lab") and is_lab("lab-healthy")
