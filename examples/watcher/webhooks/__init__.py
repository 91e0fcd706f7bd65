"""This project's admission webhooks."""
