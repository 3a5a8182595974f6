//! One look at the configuration file, under limits that keep a broken or hostile file cheap:
//! only a regular file is opened, at most `max_bytes` are read, and the nesting depth is
//! measured by a linear scan before the YAML parser sees the text (the parser's time grows
//! with the cube of the depth: 200 KB of `[` took it close to a minute).
//!
//! Every error here is the text after `<path>: ` in the refusal.

use std::fs::{File, FileType, Metadata};
use std::io::Read as _;
use std::path::Path;

use engine::conf::{KnownNames, Parsed, parse};

/// Reads the file if it is a regular file (symlinks followed) of at most `max_bytes`.
///
/// The type is checked on the path before opening and again on the opened handle, since the
/// path may change in between; the open itself does not wait on a FIFO (`O_NONBLOCK`).
pub(super) fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    let unreadable = |e: std::io::Error| format!("cannot read the file: {e}");
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    check_regular(&meta, max_bytes)?;
    let file = open_no_wait(path).map_err(unreadable)?;
    check_regular(&file.metadata().map_err(unreadable)?, max_bytes)?;
    let mut bytes = Vec::new();
    // One byte over the limit is enough to know it is exceeded: a file still growing costs at
    // most that.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(bytes)
}

fn check_regular(meta: &Metadata, max_bytes: u64) -> Result<(), String> {
    if let Some(kind) = non_regular_kind(&meta.file_type()) {
        return Err(format!(
            "not a regular file ({kind}); only a regular file (or a symlink to one) is read"
        ));
    }
    if meta.len() > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(())
}

fn too_large(max_bytes: u64) -> String {
    format!("larger than the limit of {max_bytes} bytes; the file is not parsed")
}

/// What a non-regular file is, for the message; `None` for a regular file.
fn non_regular_kind(file_type: &FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
    }
    Some("neither a file nor a directory")
}

#[cfg(unix)]
fn open_no_wait(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Without O_NONBLOCK, opening a FIFO for reading waits for a writer, possibly forever.
    // It changes nothing for a regular file.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_wait(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Decodes, drops a leading byte-order mark and the surrounding whitespace (Volcano trims too,
/// spec §1.1), checks the nesting depth and parses. The error is `<field path>: <message>`.
pub(super) fn parse_bytes(
    bytes: &[u8],
    max_depth: usize,
    known: &KnownNames<'_>,
) -> Result<Parsed, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    // Editors on Windows write one; the YAML parser would read it as the start of a second
    // document.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(line) = first_line_deeper_than(text, max_depth) {
        return Err(format!(
            "line {line}: nested deeper than the limit of {max_depth} levels; the file is not \
             parsed"
        ));
    }
    parse(text.trim(), known).map_err(|e| e.to_string())
}

/// The first line (1-based) at which the nesting of the YAML text exceeds `limit`, by a linear
/// scan that errs on the side of counting more: block levels by indentation (each `- ` entry
/// opens one more) plus the open flow brackets. Quoted scalars, comments and the content of
/// block scalars (`|`, `>`) are skipped, and a bracket only counts where YAML would start a
/// collection (at the start of a value), so that text cannot hide brackets from the count.
pub(super) fn first_line_deeper_than(text: &str, limit: usize) -> Option<usize> {
    let mut scan = DepthScan::default();
    for (index, line) in text.lines().enumerate() {
        if scan.line(line, limit) {
            return Some(index + 1);
        }
    }
    None
}

#[derive(Default)]
struct DepthScan {
    /// Indentations of the open block levels, increasing.
    indents: Vec<usize>,
    /// Open `[` and `{`.
    flow: usize,
    /// Inside a quoted scalar (which may span lines): its quote character.
    quote: Option<char>,
    /// Inside a block scalar: the indentation of the line that introduced it; its content is
    /// every following line indented more (or blank).
    block_scalar: Option<usize>,
}

impl DepthScan {
    /// Scans one line; `true` when the depth exceeds `limit` in it.
    fn line(&mut self, line: &str, limit: usize) -> bool {
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        if let Some(parent) = self.block_scalar {
            if content.is_empty() || indent > parent {
                return false;
            }
            self.block_scalar = None;
        }
        let mut rest = content;
        if self.quote.is_none() && self.flow == 0 {
            if content.is_empty() || content.starts_with('#') {
                return false;
            }
            while self.indents.last().is_some_and(|&top| top > indent) {
                self.indents.pop();
            }
            if self.indents.last() != Some(&indent) {
                self.indents.push(indent);
            }
            // `- - x`: each entry indicator opens a level, at the column of what follows it.
            let mut column = indent;
            while let Some(after) = rest
                .strip_prefix('-')
                .filter(|a| a.is_empty() || a.starts_with(' '))
            {
                let next = after.trim_start_matches(' ');
                column += 1 + (after.len() - next.len());
                rest = next;
                self.indents.push(column);
                if self.indents.len() > limit {
                    return true;
                }
            }
            if self.indents.len() > limit {
                return true;
            }
        }
        self.inline(rest, indent, limit)
    }

    /// Quotes, comments and flow brackets within a line.
    fn inline(&mut self, text: &str, indent: usize, limit: usize) -> bool {
        // The last character outside quotes and spaces: a quote or bracket starts a scalar or
        // a collection only after one of `[{,:-?` or at the start of the line.
        let mut previous: Option<char> = None;
        let mut after_space = true;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if let Some(q) = self.quote {
                match c {
                    '\\' if q == '"' => {
                        chars.next();
                    }
                    '\'' if q == '\'' && chars.peek() == Some(&'\'') => {
                        chars.next();
                    }
                    _ if c == q => {
                        self.quote = None;
                        previous = Some(c);
                    }
                    _ => {}
                }
                continue;
            }
            let at_value_start = previous.is_none_or(|p| "[{,:-?".contains(p));
            match c {
                '#' if after_space => return false,
                '"' | '\'' if at_value_start => self.quote = Some(c),
                '[' | '{' if at_value_start => {
                    self.flow += 1;
                    if self.indents.len() + self.flow > limit {
                        return true;
                    }
                }
                ']' | '}' => self.flow = self.flow.saturating_sub(1),
                '|' | '>' if at_value_start && self.flow == 0 => {
                    // A block scalar indicator with only a header (and maybe a comment) after it.
                    let header: String = chars.clone().take_while(|&h| h != '#').collect();
                    if header
                        .trim()
                        .chars()
                        .all(|h| h == '-' || h == '+' || h.is_ascii_digit())
                    {
                        self.block_scalar = Some(indent);
                        return false;
                    }
                }
                _ => {}
            }
            after_space = c == ' ' || c == '\t';
            if !after_space {
                // A bracket inside a word is part of the word: the next one is not at a start.
                let in_word = matches!(c, '[' | '{') && !at_value_start;
                previous = Some(if in_word { 'w' } else { c });
            }
        }
        false
    }
}
