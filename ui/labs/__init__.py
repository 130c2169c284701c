"""The views of the "Labs" pages: Pitfalls lab (app_pages/30_pitfalls.py), Predict, then reveal (31_quiz.py),
Share & export (32_export.py). Their computations are the core's (attention_core.labs) behind ui/cache.py's
process-wide caches; what only they draw:

    share   a full link to a page with the learner's settings, ready to paste (the export page's share box)
"""
