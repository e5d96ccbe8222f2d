//! Column buffers handed to Python without a copy: the engine's vectors, moved into a Python
//! object that exposes them through the buffer protocol (`pyarrow.py_buffer`, `numpy.frombuffer`
//! and `memoryview` read them in place, and keep the object alive while they do).

use std::os::raw::{c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::{ffi, AsPyPointer};

/// The vector a [`Buffer`] owns.
enum Owned {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// A read-only buffer of bytes that owns the engine's vector it views.
#[pyclass(module = "murmur_analysis.engine._native")]
pub struct Buffer {
    owned: Owned,
}

impl Buffer {
    fn raw(&self) -> (*const u8, usize) {
        match &self.owned {
            Owned::U8(v) => (v.as_ptr(), v.len()),
            Owned::I32(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
            Owned::I64(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
        }
    }
}

#[pymethods]
impl Buffer {
    unsafe fn __getbuffer__(slf: PyRefMut<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        if (flags & ffi::PyBUF_WRITABLE) == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("the engine's buffers are read-only"));
        }
        let (ptr, len) = slf.raw();
        // Fills a one-dimensional byte view and takes a reference to `slf` (released with the view).
        if ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr as *mut c_void, len as ffi::Py_ssize_t, 1, flags) == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __len__(&self) -> usize {
        self.raw().1
    }
}

/// Python objects viewing vectors of the engine, without copying them.
pub trait IntoBuffer {
    fn into_buffer(self, py: Python<'_>) -> PyResult<Py<Buffer>>;
}

impl IntoBuffer for Vec<u8> {
    fn into_buffer(self, py: Python<'_>) -> PyResult<Py<Buffer>> {
        Py::new(py, Buffer { owned: Owned::U8(self) })
    }
}

impl IntoBuffer for Vec<i32> {
    fn into_buffer(self, py: Python<'_>) -> PyResult<Py<Buffer>> {
        Py::new(py, Buffer { owned: Owned::I32(self) })
    }
}

impl IntoBuffer for Vec<i64> {
    fn into_buffer(self, py: Python<'_>) -> PyResult<Py<Buffer>> {
        Py::new(py, Buffer { owned: Owned::I64(self) })
    }
}
