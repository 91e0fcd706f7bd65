"""Spec transitions: the widget's mode picks which child it has; changing the mode and back
leaves the other mode's child behind when the operator only ever adds."""
