//! The records of `git log -z --raw` output, as the litany reader's walk asks git for them
//! (`--format=tformat:commit %H %ct %P`): commit headers and `--raw` change lines, each record
//! ended by a NUL, the record after a change line being its path whatever it holds.
//!
//! [`records`] reads a run of whole records in one pass, so that a walk of many commits costs
//! no Python object per record; `gitlog.py` (`LogParser`) keeps what one piece of output leaves
//! for the next and turns what is read here into a walk's columns.

/// One commit's header: `commit <id> <committer time> <parents...>`.
#[derive(Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub sha: &'a str,
    /// the committer time as written: ASCII digits, at least one
    pub time: &'a str,
    pub parents: Vec<&'a str>,
}

/// One `--raw` line and the path it names.
#[derive(Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// the commit it belongs to, counted over the whole output (the commits before included)
    pub owner: usize,
    pub mode: &'a str,
    pub blob: &'a str,
    /// its status letter (the first character of the status field)
    pub status: &'a str,
    pub path: &'a [u8],
}

/// What a run of records holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Records<'a> {
    pub headers: Vec<Header<'a>>,
    pub changes: Vec<Change<'a>>,
    /// a change line the run ended with: its path is the first record of the next run
    pub pending: Option<&'a [u8]>,
}

/// Why a run of records is not what `git log` writes, and the record that says so.
#[derive(Debug, PartialEq, Eq)]
pub enum Bad<'a> {
    /// a record that is no header, no change line and no path (or a change before any commit)
    Output(&'a [u8]),
    /// a commit header whose time is not digits
    Header(&'a [u8]),
}

/// Read `data`, whole records each ended by a NUL (a last record without one is read too).
///
/// `pending` is a change line the run before ended with (its path is this run's first record);
/// `before` counts the commits read before this run.
pub fn records<'a>(data: &'a [u8], pending: Option<&'a [u8]>, before: usize) -> Result<Records<'a>, Bad<'a>> {
    if data.is_empty() {
        return Ok(Records { pending, ..Records::default() });
    }
    let mut out = Records::default();
    let mut raw = pending;
    let body = data.strip_suffix(&[0]).unwrap_or(data); // the last NUL ends a record, and starts none
    for record in body.split(|&b| b == 0) {
        if let Some(line) = raw.take() {
            let owner = (before + out.headers.len()).checked_sub(1).ok_or(Bad::Output(line))?;
            out.changes.push(change(line, record, owner)?);
            continue;
        }
        let stripped = strip_newlines(record);
        if stripped.is_empty() {
            continue;
        }
        if stripped[0] == b':' {
            if before + out.headers.len() == 0 {
                return Err(Bad::Output(stripped)); // a change before any commit
            }
            raw = Some(stripped);
        } else if stripped.starts_with(b"commit ") {
            out.headers.push(header(stripped)?);
        } else {
            return Err(Bad::Output(stripped));
        }
    }
    out.pending = raw;
    Ok(out)
}

fn strip_newlines(record: &[u8]) -> &[u8] {
    let start = record.iter().position(|&b| b != b'\n').unwrap_or(record.len());
    &record[start..]
}

fn header(record: &[u8]) -> Result<Header<'_>, Bad<'_>> {
    let text = std::str::from_utf8(record).map_err(|_| Bad::Header(record))?;
    let mut fields = text.split(' ');
    fields.next(); // "commit"
    let sha = fields.next().unwrap_or("");
    let time = fields.next().unwrap_or("");
    if time.is_empty() || !time.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Bad::Header(record));
    }
    Ok(Header { sha, time, parents: fields.filter(|p| !p.is_empty()).collect() })
}

/// `:<old mode> <mode> <old blob> <blob> <status>` and its path.
fn change<'a>(line: &'a [u8], path: &'a [u8], owner: usize) -> Result<Change<'a>, Bad<'a>> {
    let text = std::str::from_utf8(&line[1..]).map_err(|_| Bad::Output(line))?;
    let fields: Vec<&str> = text.split(' ').collect();
    let [_old_mode, mode, _old_blob, blob, status] = fields[..] else {
        return Err(Bad::Output(line));
    };
    let status = status.char_indices().nth(1).map_or(status, |(i, _)| &status[..i]);
    Ok(Change { owner, mode, blob, status, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &[u8] = b":000000 100644 0000 1111 A";

    #[test]
    fn headers_changes_and_a_path_that_looks_like_a_change() {
        let data = b"commit aa 17 \0\n:000000 100644 0000 1111 A\0:odd name\0\ncommit bb 18 aa\0";
        let got = records(data, None, 0).unwrap();
        assert_eq!(got.headers[0], Header { sha: "aa", time: "17", parents: vec![] });
        assert_eq!(got.headers[1], Header { sha: "bb", time: "18", parents: vec!["aa"] });
        assert_eq!(got.changes, vec![Change { owner: 0, mode: "100644", blob: "1111", status: "A", path: b":odd name" }]);
        assert_eq!(got.pending, None);
    }

    #[test]
    fn a_change_line_at_the_end_waits_for_its_path() {
        let first = records(b"commit aa 17 \0\n:000000 100644 0000 1111 M\0", None, 0).unwrap();
        assert_eq!(first.pending, Some(&b":000000 100644 0000 1111 M"[..]));
        let second = records(b"messages/x\0commit bb 18 aa\0", first.pending, 1).unwrap();
        assert_eq!(second.changes[0].owner, 0);
        assert_eq!(second.changes[0].path, b"messages/x");
        assert_eq!(second.headers.len(), 1);
    }

    #[test]
    fn what_git_log_does_not_write_is_refused() {
        assert_eq!(records(b":000000 100644 0000 1111 A\0p\0", None, 0), Err(Bad::Output(RAW)));
        assert_eq!(records(b"commit aa soon \0", None, 0), Err(Bad::Header(b"commit aa soon ")));
        assert_eq!(records(b"commit aa 17 \0something\0", None, 0), Err(Bad::Output(b"something")));
        assert_eq!(records(b"commit aa 17 \0\n:1 2 3\0p\0", None, 0), Err(Bad::Output(b":1 2 3")));
        // a change line after the commits of an earlier run belongs to the last of them
        assert_eq!(records(b"\n:000000 100644 0000 1111 A\0p\0", None, 3).unwrap().changes[0].owner, 2);
        assert_eq!(records(b"", Some(RAW), 1).unwrap().pending, Some(RAW));
    }
}
