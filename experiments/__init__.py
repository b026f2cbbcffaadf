"""Runnable experiments (``python experiments/<name>.py``); shared report helpers in ``report``."""
