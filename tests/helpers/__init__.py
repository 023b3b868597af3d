"""Helpers the tests import: fakes, process drivers, the recording ACP client."""
