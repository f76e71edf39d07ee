//! What a Service's ports and an Endpoints subset's ports are checked for
//! alike: a name (required when there are several, a DNS-1123 label, once
//! per list when the caller keeps the names), a port number and a
//! protocol (`validateServicePort`'s and `validateEndpointPort`'s shared
//! part).

use std::collections::BTreeSet;

use super::names::{is_dns1123_label, is_valid_port_num};
use super::{ErrorList, FieldError, Path};

/// The protocols a port may name, sorted as upstream lists them.
pub const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// A port's name, number and protocol; `seen` collects the names of one
/// list to refuse a second port of the same name.
pub fn validate_named_port(
    name: Option<&str>,
    require_name: bool,
    port: i32,
    protocol: Option<&str>,
    seen: Option<&mut BTreeSet<String>>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    match name.unwrap_or("") {
        "" if require_name => errs.push(FieldError::required(&path.child("name"), "")),
        "" => {}
        name => {
            for problem in is_dns1123_label(name) {
                errs.push(FieldError::invalid(&path.child("name"), name, problem));
            }
            if let Some(seen) = seen
                && !seen.insert(name.to_string())
            {
                errs.push(FieldError::duplicate(&path.child("name"), name));
            }
        }
    }
    for problem in is_valid_port_num(i64::from(port)) {
        errs.push(FieldError::invalid(&path.child("port"), port, problem));
    }
    match protocol.unwrap_or("") {
        "" => errs.push(FieldError::required(&path.child("protocol"), "")),
        p if !PROTOCOLS.contains(&p) => {
            errs.push(FieldError::not_supported(
                &path.child("protocol"),
                p,
                PROTOCOLS,
            ));
        }
        _ => {}
    }
    errs
}
