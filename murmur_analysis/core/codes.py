"""Value codes: each value of an Arrow column as the number of its distinct value, for grouping with numpy."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["value_codes"]


def value_codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Each value's code among the column's distinct values, and those values (a null is a value of its own).

    Returns:
        ``(codes, values)``: ``codes[i]`` (int64) is row ``i``'s place in ``values``, the distinct
        values in the order each first appears.
    """
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64), encoded.dictionary
