"""Deletion and finalizers: the finalizer comes off before the widget's record is deleted,
so a crash in between lets the widget go and leaves its record for ever."""
