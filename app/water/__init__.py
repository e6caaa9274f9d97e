"""The water page of the app (``app/main.py``): its settings, caches, sidebar and panels."""
