"""shockwave-gym."""
