"""Exploration: a test of an operator run again under perturbations learned from a reference
run of the same test, and each run judged by oracles that need nothing from the user
(docs/testing.md, "Exploration"; decision 55).

    trace.py      what a run did: the manager's records (runtime observers), with the
                  stable names perturbations use to point at a write, a read or an event
    points.py     a perturbation as a string (`crash@widget:create:ConfigMap/w-*#1`)
    inject.py     how a perturbation is done inside a run (a client that fails or crashes a
                  write, serves a stale read, deletes mid-creation; events held back)
    endstate.py   the cluster's state at the end of a run, normalised, and its differences
    harness.py    one run of a test inside a pytest process: settling, the phases after the
                  test, and what is kept of the run
    supervisor.py the run's environment and the managers it starts (and restarts)
    specchange.py another valid spec for an object (the `revert` perturbation)
    plan.py       the perturbations worth trying, from the reference run
    oracles.py    a run against the references: findings
    pool.py       worker processes that run tests, one run at a time
    session.py    `pytest --kubeforge-explore`: reference runs, plans, findings, the report
"""
