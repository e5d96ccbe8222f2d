"""The cores every source goes through, exact to the upstream runtimes.

:mod:`.cursor` pages a conversation newest first with murmur's opaque cursor; :mod:`.pairing`
pairs tool calls with their results; :mod:`.assembly` groups sides and drops orphans as litany
does; :mod:`.history` measures growth. They import only :mod:`murmur_analysis.core`.
"""
