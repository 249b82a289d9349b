"""Hangs while loaded (no CPU used)."""
import time

time.sleep(10**6)
