"""The interfaces people use.

The command line (:mod:`.cli`, its tables :mod:`.render`), the notebook explorer
(:mod:`.widgets`) and a conversation as escaped HTML (:mod:`.transcript_html`).
"""
