"""The controllers of this project."""
