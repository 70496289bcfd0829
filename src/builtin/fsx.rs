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

use crate::limits::FILE_BYTES;
use crate::tool::{ExecContext, Stop, ToolResult};
use nix::fcntl::OFlag;
use std::fs::{Metadata, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

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

/// The bytes of a regular file, at most [`FILE_BYTES`]; "file not
/// found" for a missing path (the recorded wording), a sentence naming the
/// path for anything else. The file is read in 1 MiB steps and the call's
/// deadline and cancellation are checked between them.
pub fn read_file(tool: &str, path: &str, ctx: &ExecContext) -> Result<Vec<u8>, ToolResult> {
    read_checked(path, Some(ctx)).map_err(|f| f.into_result(tool, ctx))
}

/// [`read_file`] with the reason alone (no tool name in front), for a
/// caller that checks its deadline itself.
pub fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    read_checked(path, None).map_err(|f| match f {
        Failure::Reason(why) => why,
        Failure::Stopped(_) => String::new(),
    })
}

/// Why a file operation did not complete.
enum Failure {
    Reason(String),
    Stopped(Stop),
}

impl Failure {
    fn into_result(self, tool: &str, ctx: &ExecContext) -> ToolResult {
        match self {
            Failure::Reason(why) => ToolResult::error(format!("{tool}: {why}")),
            Failure::Stopped(why) => ctx.stopped(tool, why),
        }
    }
}

impl From<String> for Failure {
    fn from(why: String) -> Self {
        Failure::Reason(why)
    }
}

/// How much is read between two looks at the deadline.
const STEP: u64 = 1 << 20;

fn read_checked(path: &str, ctx: Option<&ExecContext>) -> Result<Vec<u8>, Failure> {
    let cannot = |e: std::io::Error| format!("cannot read {path}: {}", reason(&e));
    let meta = match std::fs::metadata(path) {
        Ok(m) if !path.is_empty() => m,
        Err(e) if e.kind() != ErrorKind::NotFound && !path.is_empty() => {
            return Err(cannot(e).into())
        }
        _ => return Err(format!("file not found: {path}").into()),
    };
    if let Some(refused) = not_regular(path, &meta) {
        return Err(refused.into());
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if let Some(refused) = not_regular(path, &meta) {
        return Err(refused.into());
    }
    let too_large = || {
        format!(
            "{path} is larger than {} MiB, the most a file tool loads from one file",
            FILE_BYTES >> 20
        )
    };
    // The size is only a hint: a file may grow while it is read.
    if meta.len() > FILE_BYTES {
        return Err(too_large().into());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    loop {
        if let Some(why) = ctx.and_then(ExecContext::stop) {
            return Err(Failure::Stopped(why));
        }
        let n = (&file).take(STEP).read_to_end(&mut bytes).map_err(cannot)?;
        if bytes.len() as u64 > FILE_BYTES {
            return Err(too_large().into());
        }
        if n == 0 {
            return Ok(bytes);
        }
    }
}

/// Writes `content` to `path`, creating its parent directories first. An
/// existing non-regular file is refused before anything is written; a
/// regular one is truncated only once the open descriptor is known to be a
/// regular file.
///
/// The deadline and cancellation are checked last thing before the file is
/// truncated: a write that has begun is finished, never left half done.
pub fn write_file(
    tool: &str,
    path: &str,
    content: &[u8],
    ctx: &ExecContext,
) -> Result<(), ToolResult> {
    write_checked(path, content, ctx).map_err(|f| f.into_result(tool, ctx))
}

fn write_checked(path: &str, content: &[u8], ctx: &ExecContext) -> Result<(), Failure> {
    if let Ok(meta) = std::fs::metadata(path) {
        if let Some(refused) = not_regular(path, &meta) {
            return Err(refused.into());
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
        return Err(refused.into());
    }
    if let Some(why) = ctx.stop() {
        return Err(Failure::Stopped(why));
    }
    file.set_len(0).map_err(cannot)?;
    file.write_all(content).map_err(cannot)?;
    Ok(())
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
