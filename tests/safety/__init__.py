"""The redactor, the terminal-text sanitizer and the private-file rules."""
