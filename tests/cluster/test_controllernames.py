"""The `--controllers` list of the development cluster, read as kube-controller-manager reads
its flag: `*`, `name`, `-name`, aliases, the first entry naming a controller decides."""

from __future__ import annotations

import pytest

from kubeforge._cluster.controllernames import KNOWN, enabled_controllers, split_list

EVERY = frozenset(KNOWN)


def test_star_runs_every_controller_and_the_default_is_star() -> None:
    from kubeforge._cluster.options import ClusterOptions

    assert enabled_controllers(["*"]) == EVERY
    assert enabled_controllers(ClusterOptions().controllers) == EVERY


def test_a_minus_turns_one_off_by_name_or_alias() -> None:
    assert enabled_controllers(["*", "-job-controller"]) == EVERY - {"job-controller"}
    assert enabled_controllers(["*,-job"]) == EVERY - {"job-controller"}
    assert enabled_controllers(["*", "-garbagecollector", "-namespace"]) == EVERY - {
        "garbage-collector-controller",
        "namespace-controller",
    }


def test_without_a_star_only_the_named_controllers_run() -> None:
    assert enabled_controllers(["job", "replicaset-controller"]) == {
        "job-controller",
        "replicaset-controller",
    }
    assert enabled_controllers([]) == frozenset()
    assert enabled_controllers([""]) == frozenset()


def test_the_first_entry_naming_a_controller_decides() -> None:
    assert "job-controller" not in enabled_controllers(["-job", "*", "job"])
    assert "job-controller" in enabled_controllers(["job", "-job"])
    assert "job-controller" not in enabled_controllers(["*", "-job", "job"])


def test_an_unknown_name_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match='"jobs" is not in the list of known controllers'):
        enabled_controllers(["*,-jobs"])
    with pytest.raises(ValueError, match='"cronjobs" is not in the list'):
        enabled_controllers(["cronjobs"])


def test_entries_are_split_at_commas_and_trimmed() -> None:
    assert split_list(["*, -job", "", "deployment ,"]) == ["*", "-job", "deployment"]
