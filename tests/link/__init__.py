"""Tests of the device link, the simulated device and the record/simulate commands."""
