"""Unobserved state: the operator moves its phase along only from the pod phase it saw last
time, so a pod that finishes before the operator ever sees it running leaves it stuck."""
