//! Which resource names Kubernetes treats as scalar (extended) resources.

/// Resource-quota object counts (`count/pods`, …), never scheduling resources.
pub fn is_count_quota(name: &str) -> bool {
    name.starts_with("count/")
}

/// Kubernetes' `IsScalarResourceName`: extended resources, `hugepages-*`, names in the
/// `kubernetes.io/` namespace and `attachable-volumes-*`.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || is_prefixed_native_resource(name)
        || name.starts_with("attachable-volumes-")
}

fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains("kubernetes.io/")
}

fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || is_prefixed_native_resource(name)
}

/// Kubernetes' `IsExtendedResourceName`: not native, not `requests.`-prefixed, and
/// `requests.<name>` is a qualified name.
fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}"))
}

/// apimachinery's `IsQualifiedName`: `[prefix/]name` with a DNS-1123 subdomain prefix and a
/// name of at most 63 characters that starts and ends alphanumeric.
fn is_qualified_name(value: &str) -> bool {
    let mut parts = value.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return false,
    };
    if prefix.is_some_and(|p| !is_dns1123_subdomain(p)) {
        return false;
    }
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    bytes.len() <= 63
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253
        && value.split('.').all(|label| {
            let bytes = label.as_bytes();
            let edge_ok =
                |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            edge_ok(bytes.first())
                && edge_ok(bytes.last())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}
