"""Internal: the implementation of `kubeforge.testing` (TestEnv, kubectl, waiting, round trips,
strategies, faults, `kubeforge dev` in a process) and the pytest plugin (`plugin.py`, found
through its entry point). Nothing here is imported when the package is: pytest loads the
plugin in every run of any project where kubeforge is installed.
"""
