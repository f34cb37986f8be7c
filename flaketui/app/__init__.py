"""The Textual app. Only this package imports Textual."""
