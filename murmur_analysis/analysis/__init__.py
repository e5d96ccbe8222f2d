"""What is computed from a corpus.

Token and cost metrics (:mod:`.metrics`), the reports the command line prints
(:mod:`.reports`), and the figures the notebooks draw (:mod:`.figures`).
"""
