"""Oracles: what makes a run a finding, judged against the reference runs of its test.

None needs code from the user:

- the test's own assertions (a perturbed run whose test fails; not for `delete`, which
  abandons the test, and after which only what the managers made and left behind counts);
- the end state against the reference's (Sieve's differential oracle, endstate.py): objects
  missing, leaked or changed, after the test and again after the objects the test made were
  deleted (for `delete`, only after; not for `advance`, after which time has rightly moved
  the state on; after a `revert`, the status other controllers keep of what the operator
  made may differ, as a Deployment's names its latest rollout);
- convergence: after everything settled, asking every controller to reconcile everything
  again changes nothing, no reconcile is left failing, and no kubeforge component logged an
  error (that the reference runs did not).

A run whose perturbation never happened (its place was not reached) is not judged: it is
another reference run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeforge._testing.explore.endstate import Difference, Noise, differences, noise_between

__all__ = ["Finding", "References", "judge", "judge_reference"]

Result = Mapping[str, Any]


@dataclass
class Finding:
    """What one oracle found in one run."""

    perturbation: str
    oracle: str
    details: list[str] = field(default_factory=list)


@dataclass
class References:
    """The reference runs of a test, and the noise between them."""

    first: Result
    second: Result
    noise: Noise
    noise_deleted: Noise

    @classmethod
    def of(cls, first: Result, second: Result) -> References:
        return cls(
            first,
            second,
            noise_between(first["end"]["objects"], second["end"]["objects"]),
            noise_between(
                (first.get("end_deleted") or {}).get("objects") or {},
                (second.get("end_deleted") or {}).get("objects") or {},
            ),
        )


def judge_reference(references: References) -> list[Finding]:
    """Findings in the unperturbed runs themselves: the operator does not settle."""
    found = []
    one, two = _convergence(references.first), _convergence(references.second)
    for (oracle, details_one), (_, details_two) in zip(one, two, strict=True):
        if details_one and details_two:
            found.append(Finding("(none)", oracle, details_one))
    return found


def _convergence(run: Result) -> list[tuple[str, list[str]]]:
    """(oracle, what it found) for the convergence oracles of one run."""
    converged = run.get("convergence") or {}
    changed = [f"re-reconciling wrote {write}" for write in converged.get("writes") or []] + [
        f"and changed {key}" for key in converged.get("changed") or []
    ]
    return [
        (
            "does not settle: reconciling again changes objects",
            changed if converged.get("writes") else [],
        ),
        ("reconciles keep failing", list(converged.get("failing") or [])),
    ]


def judge(run: Result, references: References) -> list[Finding]:
    """The findings of one perturbed run."""
    perturbation = str(run["perturbation"])
    if run.get("harness_error") or not run.get("applied"):
        return []
    action = perturbation.partition("@")[0]
    found: list[Finding] = []
    if run.get("outcome") == "failed" and not run.get("abandoned"):
        found.append(Finding(perturbation, "the test failed", [str(run.get("failure") or "")]))
    reference = references.first
    if action == "advance":
        # Time moved on after the test: the state may rightly differ; it must still settle.
        run = {k: v for k, v in run.items() if k not in ("end", "end_deleted")}
    if action != "delete" and "end" in run:
        diff = differences(reference["end"]["objects"], run["end"]["objects"], references.noise)
        if action == "revert":
            diff = _operators_part(diff, run.get("reconciled_kinds") or [])
        if diff:
            found.append(
                Finding(
                    perturbation, "end state differs from the reference", [str(d) for d in diff]
                )
            )
    if "end_deleted" in run and "end_deleted" in reference:
        diff = differences(
            reference["end_deleted"]["objects"],
            run["end_deleted"]["objects"],
            references.noise_deleted,
        )
        if action == "delete":
            # The test was abandoned: what it would have done after is not there. What the
            # managers made and left behind is what counts.
            made = set(run.get("created") or [])
            diff = [d for d in diff if d.what == "leaked" and _made_by(d.key, made)]
        if diff:
            found.append(
                Finding(
                    perturbation,
                    "after deleting what the test made, the end state differs from the reference",
                    [str(d) for d in diff],
                )
            )
    baseline = dict(_convergence(reference))
    for oracle, details in _convergence(run):
        if details and not baseline.get(oracle):
            found.append(Finding(perturbation, oracle, details))
    logged = set(references.first.get("errors") or []) | set(references.second.get("errors") or [])
    new_errors = [e for e in run.get("errors") or [] if e not in logged]
    if new_errors:
        found.append(Finding(perturbation, "errors logged", _unique(new_errors)))
    return found


def _made_by(key: str, made: set[str]) -> bool:
    """Whether the end state's `key` (`Kind/<ns>/name`, `Kind/name`, a generated one with
    `#n`) is an object the trace says the managers created (`Kind/name`)."""
    kind, _, rest = key.partition("/")
    name = rest.rpartition("/")[2].partition("#")[0]
    return any(m.partition("/")[0] == kind and m.rpartition("/")[2] == name for m in made)


def _operators_part(diff: list[Difference], reconciled: Sequence[str]) -> list[Difference]:
    """What a spec changed and changed back may rightly leave different: the status other
    controllers keep of the objects the operator made (a Deployment's conditions name the
    ReplicaSet of its latest rollout). The status of the reconciled kinds still counts."""
    return [
        d
        for d in diff
        if not (
            d.what == "changed"
            and d.path.startswith("status.")
            and d.key.partition("/")[0] not in reconciled
        )
    ]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
