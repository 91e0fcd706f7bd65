"""Deletion during creation: the record is made before the finalizer that would clean it up
is on the widget, so a widget deleted in between goes at once and leaves its record."""
