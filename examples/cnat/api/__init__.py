"""API types of this project: one package per version.

Both versions are imported here, so that At's hub (v1) knows its spoke (v1alpha1), whichever
the program imports first.
"""

from api import v1, v1alpha1

__all__ = ["v1", "v1alpha1"]
