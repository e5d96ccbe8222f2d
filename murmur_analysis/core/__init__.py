"""Values and types every layer shares: the lowest layer, importing nothing of the package above it.

Entries, messages and usage (:mod:`.model`), content blocks and their wire forms
(:mod:`.blocks`, :mod:`.wire`), the hand-off a source gives the cores (:mod:`.handoff`), values
held exactly (:mod:`.values`, :mod:`.serde`), providers and prices (:mod:`.providers`,
:mod:`.pricing`), identities and paths (:mod:`.identity`, :mod:`.paths`), diagnostics rows
(:mod:`.diagnostics`), and the file system as every reader meets it (:mod:`.files`,
:mod:`.cache`).
"""
