"""Crash between dependent writes: the child is created under a generated name, and its name
recorded in the widget's status by a second write. A crash between the two leaves a child
nobody knows of, and the restarted operator makes another."""
