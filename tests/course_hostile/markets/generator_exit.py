"""GeneratorExit at load."""
raise GeneratorExit
