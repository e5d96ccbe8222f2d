"""The table contract and the builder that fills it.

:mod:`.schema` declares every table and column once (the docs are generated from it);
:mod:`.rows` and :mod:`.columns` build Arrow record batches from the hand-off;
:mod:`.chunks` turns entries into rows a chunk at a time; :mod:`.frames` gives pandas frames.
Sources declare their own tables with this contract, so it sits below them.
"""
