"""Settings: the model, the settings file, the command line."""
