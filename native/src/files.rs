//! Many small files read at once: every file on a core of its own, with the GIL released.
//!
//! A source that keeps a record per file (litany's step records, a FlexiGPT store, dispatch
//! sessions) opens thousands of small files, and four system calls per file from Python cost
//! more than reading them. Here each path is opened without blocking (a FIFO or a device
//! standing where a file was expected never hangs the read), checked to be a regular file on
//! the handle that was opened, and read whole. Anything else (nothing there, a link that loops,
//! no permission, a FIFO, a folder, a read that failed) gives `None`: this reader never words
//! a problem; the caller looks at such a path again with the toolkit's one careful reader
//! (`murmur_analysis.core.files.read_regular`), which reports it.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rayon::prelude::*;

/// The bytes of `path` when it is a regular file read whole without a problem, else `None`.
pub fn regular(path: &Path) -> Option<Vec<u8>> {
    let mut file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let mut data = Vec::with_capacity(meta.len() as usize + 1);
    file.read_to_end(&mut data).ok()?;
    Some(data)
}

/// [`regular`] of every path, in order, the files shared among the pool's threads.
pub fn many(paths: &[std::path::PathBuf]) -> Vec<Option<Vec<u8>>> {
    paths.par_iter().with_min_len(16).map(|p| regular(p)).collect()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    #[test]
    fn regular_files_only() {
        let dir = std::env::temp_dir().join(format!("ma-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.json");
        std::fs::File::create(&file).unwrap().write_all(b"{\"a\": 1}").unwrap();
        let empty = dir.join("empty");
        std::fs::File::create(&empty).unwrap();
        let paths = vec![file.clone(), empty, dir.join("missing"), dir.clone()];
        let got = super::many(&paths);
        assert_eq!(got, vec![Some(b"{\"a\": 1}".to_vec()), Some(Vec::new()), None, None]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
