"""Loading: which sources read what, in what order, on one machine or on a cluster.

:mod:`.discovery` finds which sources read which paths, :mod:`.plan` orders the work and its
batches, :mod:`.progress` shows it, :mod:`.distributed` runs the same plan on Dask, and
:mod:`.samples` finds the bundled samples.
"""
