"""Internal: the `kubeforge` command (`main.py` puts it together, one module per command),
and `manager_main`, a project's manager command (`run.py`), exported as
`kubeforge.manager_main`.
"""
