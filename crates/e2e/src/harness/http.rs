//! A small HTTP/1.1 client for the daemon's endpoints, and metric sample parsing.

use super::*;

/// The last `n` lines of a file (for error messages).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One `GET` over HTTP/1.0 (the daemon's endpoints are plain HTTP on loopback; no HTTP client
/// crate is needed for that). Returns status and body.
pub async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| anyhow!("GET http://{addr}{path}: no answer within 10s"))?
        .with_context(|| format!("GET http://{addr}{path}"))?;
    parse_response(&raw).with_context(|| format!("GET http://{addr}{path}"))
}

/// Status and body of a raw HTTP/1.x response (content-length, chunked or read-to-close).
pub(super) fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, String)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("response without a header end")?;
    let head = std::str::from_utf8(&raw[..split]).context("response head is not UTF-8")?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

pub(super) fn dechunk(mut data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("chunk size line without CRLF")?;
        let size_text = std::str::from_utf8(&data[..eol]).context("chunk size is not text")?;
        let size_hex = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .with_context(|| format!("bad chunk size {size_text:?}"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).context("truncated chunk")?;
        out.extend_from_slice(chunk);
        data = data
            .get(size + 2..)
            .context("chunk without trailing CRLF")?;
    }
}

/// One sample line of the Prometheus text format.
#[derive(Debug, PartialEq)]
pub(super) struct Sample {
    pub(super) name: String,
    pub(super) labels: Vec<(String, String)>,
    pub(super) value: f64,
}

pub(super) fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ', '\t'])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => break i,
                ',' | ' ' => {}
                '=' => {
                    if chars.next()?.1 != '"' {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '"' => break,
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            other => value.push(other),
                        }
                    }
                    labels.push((std::mem::take(&mut key), value));
                }
                other => key.push(other),
            }
        };
        rest = &inner[end + 1..];
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// CPU quantity in millicores ("4", "500m", "1.5", "2k"); `None` if it is not one.
pub fn cpu_millis(q: &str) -> Option<i64> {
    let q = q.trim();
    let (number, scale) = if let Some(n) = q.strip_suffix('m') {
        (n, 1.0)
    } else if let Some(n) = q.strip_suffix('k') {
        (n, 1_000_000.0)
    } else {
        (q, 1000.0)
    };
    let value: f64 = number.parse().ok()?;
    value.is_finite().then(|| (value * scale).round() as i64)
}
