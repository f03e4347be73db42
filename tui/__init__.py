"""The Textual dashboard over the registry core."""
