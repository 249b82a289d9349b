"""KeyboardInterrupt at load."""
raise KeyboardInterrupt
