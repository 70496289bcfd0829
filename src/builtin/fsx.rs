//! File-system helpers that turn every I/O failure into an error result
//! naming the tool and the path.
//!
//! Only regular files are read or written. A FIFO, a socket or a device is
//! refused with an error naming what it is: opening a FIFO blocks until the
//! other end opens it, and a device such as `/dev/zero` never ends. The
//! check is made twice, on the path before opening it (so nothing but a
//! regular file is ever opened for writing, and no device is opened at all)
//! and on the open descriptor (so a file swapped for a FIFO in between is
//! still caught). Files are opened with `O_NONBLOCK`, which makes the open
//! of a FIFO return at once instead of blocking; it changes nothing for a
//! regular file.

use crate::tool::ToolResult;
use nix::fcntl::OFlag;
use std::fs::{Metadata, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most bytes `read` (and `edit`, `apply_patch`) loads from one file:
/// 64 MiB, the cap HTTP tools put on a response body. A larger file is an
/// error result, never a host that runs out of memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// What a non-regular file is, for the error that refuses it.
fn kind_of(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

fn not_regular(path: &str, meta: &Metadata) -> Option<String> {
    kind_of(meta).map(|kind| {
        if meta.is_dir() {
            format!("{path} is a directory, not a file")
        } else {
            format!("{path} is {kind}, not a regular file; only regular files are read or written")
        }
    })
}

/// The bytes of a regular file, at most [`MAX_FILE_BYTES`]; "file not
/// found" for a missing path (the recorded wording), a sentence naming the
/// path for anything else.
pub fn read_file(tool: &str, path: &str) -> Result<Vec<u8>, ToolResult> {
    read_bytes(path).map_err(|why| ToolResult::error(format!("{tool}: {why}")))
}

/// [`read_file`] with the reason alone (no tool name in front).
pub fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {path}: {}", reason(&e));
    let meta = match std::fs::metadata(path) {
        Ok(m) if !path.is_empty() => m,
        Err(e) if e.kind() != ErrorKind::NotFound && !path.is_empty() => return Err(cannot(e)),
        _ => return Err(format!("file not found: {path}")),
    };
    if let Some(refused) = not_regular(path, &meta) {
        return Err(refused);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if let Some(refused) = not_regular(path, &meta) {
        return Err(refused);
    }
    let too_large = || {
        format!(
            "{path} is larger than {} MiB, the most a file tool loads from one file",
            MAX_FILE_BYTES >> 20
        )
    };
    // The size is only a hint: a file may grow while it is read.
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Writes `content` to `path`, creating its parent directories first. An
/// existing non-regular file is refused before anything is written; a
/// regular one is truncated only once the open descriptor is known to be a
/// regular file.
pub fn write_file(tool: &str, path: &str, content: &[u8]) -> Result<(), ToolResult> {
    write_bytes(path, content).map_err(|why| ToolResult::error(format!("{tool}: {why}")))
}

fn write_bytes(path: &str, content: &[u8]) -> Result<(), String> {
    if let Ok(meta) = std::fs::metadata(path) {
        if let Some(refused) = not_regular(path, &meta) {
            return Err(refused);
        }
    }
    if let Some(parent) = Path::new(path).parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent).map_err(|e| {
                format!(
                    "cannot create the parent directory of {path}: {}",
                    reason(&e)
                )
            })?;
        }
    }
    let cannot = |e: std::io::Error| format!("cannot write {path}: {}", reason(&e));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_WRONLY|O_NONBLOCK on a FIFO that nobody reads.
            Some(code) if code == nix::errno::Errno::ENXIO as i32 => {
                format!("{path} is a FIFO (named pipe), not a regular file; only regular files are read or written")
            }
            _ => cannot(e),
        })?;
    let meta = file.metadata().map_err(cannot)?;
    if let Some(refused) = not_regular(path, &meta) {
        return Err(refused);
    }
    file.set_len(0).map_err(cannot)?;
    file.write_all(content).map_err(cannot)
}

fn reason(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::NotFound => "no such file or directory".to_string(),
        ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// "tool: cannot read /x: permission denied".
pub fn io_error(tool: &str, what: &str, path: &str, e: &std::io::Error) -> ToolResult {
    ToolResult::error(format!("{tool}: {what} {path}: {}", reason(e)))
}
