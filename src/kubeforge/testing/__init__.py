"""Testing operators: TestEnv (the envtest equivalent) and a pytest plugin."""

from kubeforge.testing.env import USE_EXISTING_CLUSTER, TestEnv

__all__ = ["USE_EXISTING_CLUSTER", "TestEnv"]
