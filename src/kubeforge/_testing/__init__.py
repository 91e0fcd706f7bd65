"""Internal: the implementation of `kubeforge.testing` (TestEnv, kubectl, waiting, round trips,
strategies, faults for reconcilers, client interceptors, server faults and write records,
crash points, `kubeforge dev` in a process) and the pytest plugin (`plugin.py`, found
through its entry point). Nothing here is imported when the package is: pytest loads the
plugin in every run of any project where kubeforge is installed.
"""
