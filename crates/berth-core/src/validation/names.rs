//! String-format checks with upstream's exact messages: label keys
//! ("qualified names"), label values, DNS-1123 subdomains and labels,
//! DNS-1035 labels, ConfigMap keys, port numbers and names, and canonical
//! decimal integers.
//!
//! Ports of apimachinery's `pkg/api/validate/content` (`IsLabelKey`,
//! `IsLabelValue`, `IsDNS1123Subdomain`, `IsDecimalInteger`) and
//! `pkg/util/validation` (`IsQualifiedName`, `IsValidLabelValue` and
//! `IsDNS1123Subdomain`, which upstream now forwards to or duplicates from
//! `content`). Each function returns the list of problems; empty means valid.
//!
//! Upstream uses Go regexps; the character classes here are checked by hand
//! over bytes (every class is ASCII, and Go's `$` only matches at the very
//! end), which is equivalent and needs no regex dependency.

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_MAX_LENGTH: usize = 63;

const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Maximum length of a label value, in bytes.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// Maximum length of a DNS-1123 subdomain, in bytes.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

const DECIMAL_INTEGER_ERR_MSG: &str = "must be a valid decimal integer in canonical form";

/// `EmptyError()` in both upstream packages.
fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `MaxLenError` of `pkg/api/validate/content`, which says "bytes". (The
/// older copy in `pkg/util/validation` still says "characters"; see
/// [`is_dns1123_subdomain`].)
fn content_max_len_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// `MaxLenError` of `pkg/util/validation`.
fn util_max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `RegexError`: the message, the examples, and the pattern upstream
/// validates with. The doubled space after each example's comma is
/// upstream's (`"'" + ex + "', "` joined with `" or "`).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(example);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && b.iter().all(|c| lower_alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// `^<label>(\.<label>)*$`
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `IsDNS1123Subdomain`, with the package's `MaxLenError`: the two upstream
/// copies differ only in that message.
fn dns1123_subdomain_errors(value: &str, max_len_error: fn(usize) -> String) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `content.IsDNS1123Subdomain`, used for label-key prefixes (says "bytes").
fn content_is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value, content_max_len_error)
}

/// `IsQualifiedName` (= `content.IsLabelKey`): an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 bytes of
/// alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    content_is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|msg| format!("prefix part {msg}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };

    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > LABEL_KEY_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            content_max_len_error(LABEL_KEY_MAX_LENGTH)
        ));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue` (= `content.IsLabelValue`): empty, or at most 63
/// bytes shaped like a label-key name.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(content_max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !(value.is_empty() || matches_label_key_name(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `validation.IsDNS1123Subdomain` from `pkg/util/validation`: at most 253
/// bytes of dot-separated lowercase RFC 1123 labels. Its length message
/// still says "characters", unlike the `content` copy used inside
/// [`is_qualified_name`]; both are kept so messages match upstream's.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value, util_max_len_error)
}

/// `validation.IsDNS1123Label`: at most 63 lowercase alphanumerics or
/// `-`, starting and ending alphanumeric (namespace names).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(util_max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a label: with the length checked,
            // that can only be its dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `validation.IsDNS1035Label`: like a DNS-1123 label, but starting with a
/// letter (Service names).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(util_max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `validation.IsConfigMapKey`: a key of a ConfigMap's or Secret's data.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(util_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let charset = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    if value.is_empty() || !value.as_bytes().iter().all(charset) {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(ch_dir_prefix(value));
    errs
}

/// `hasChDirPrefix`: `.`, `..` and anything starting with `..` could climb
/// out of a directory the key becomes a file name in.
fn ch_dir_prefix(value: &str) -> Option<String> {
    match value {
        "." => Some("must not be '.'".into()),
        ".." => Some("must not be '..'".into()),
        v if v.starts_with("..") => Some("must not start with '..'".into()),
        _ => None,
    }
}

/// `validation.InclusiveRangeError`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `validation.IsValidPortNum`: 1 to 65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `validation.IsValidPortName` (an IANA service name): at most 15
/// characters of `[-a-z0-9]`, at least one letter, no `--`, no hyphen at
/// either end.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let bytes = port.as_bytes();
    if port.len() > 15 {
        errs.push(util_max_len_error(15));
    }
    let charset = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    if bytes.is_empty() || !bytes.iter().all(charset) {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !bytes.iter().any(u8::is_ascii_lowercase) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if bytes.first() == Some(&b'-') || bytes.last() == Some(&b'-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// The language [`is_decimal_integer`] accepts, as a plain predicate: `"0"`,
/// or an optional `-` then a digit 1-9 then any digits. Borrows and never
/// allocates, so hot paths (e.g. [`crate::toleration`]'s `Gt`/`Lt`
/// comparisons) can use it directly. Does not check the value fits any
/// integer type.
#[inline]
pub fn is_canonical_decimal_integer(value: &str) -> bool {
    let digits = value.strip_prefix('-').unwrap_or(value);
    match digits.as_bytes() {
        // "" or a lone "-".
        [] => false,
        // "0" alone is canonical; "-0" is not.
        [b'0'] => digits.len() == value.len(),
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    }
}

/// `content.IsDecimalInteger`: `"0"`, or an optional `-` then a digit 1-9
/// then any digits. Stricter than integer parsing: `"0100"`, `"+5"`, `"-0"`
/// and `""` are rejected. Does not check the value fits any integer type.
pub fn is_decimal_integer(value: &str) -> Vec<String> {
    if value.is_empty() {
        vec![empty_error().to_string()]
    } else if is_canonical_decimal_integer(value) {
        Vec::new()
    } else {
        vec![DECIMAL_INTEGER_ERR_MSG.to_string()]
    }
}

const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";

/// `IsValidPercent`: `^[0-9]+%$` (`maxSurge: "25%"`).
pub fn is_valid_percent(value: &str) -> Vec<String> {
    let valid = value
        .strip_suffix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_ERR_MSG, PERCENT_FMT, &["1%", "93%"])]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Upstream `TestIsValidPercent`.
    #[test]
    fn valid_percents_are_digits_and_a_percent_sign() {
        for good in ["0%", "00000%", "93%", "100%", "101%"] {
            assert!(is_valid_percent(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "0",
            "100",
            "0.0%",
            "99.99%",
            "hundred%",
            "infinity%",
            "%",
            "-0%",
            "-10%",
        ] {
            assert_eq!(
                is_valid_percent(bad),
                [
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
                ],
                "{bad:?}"
            );
        }
    }

    #[test]
    fn qualified_name_accepts_upstream_success_cases() {
        // Upstream TestIsQualifiedName / TestIsLabelKey successCases.
        let long_prefixed = format!("{}/{}", "a".repeat(253), "b".repeat(63));
        let a63 = "a".repeat(63);
        let cases = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &a63,
            &long_prefixed,
        ];
        for (i, c) in cases.iter().enumerate() {
            assert_eq!(
                is_qualified_name(c),
                Vec::<String>::new(),
                "case[{i}] {c:?}"
            );
        }
    }

    #[test]
    fn qualified_name_rejects_upstream_error_cases() {
        // Upstream TestIsQualifiedName / TestIsLabelKey errorCases.
        let a64 = "a".repeat(64);
        let long_prefix = format!("{}/abc", "a".repeat(254));
        let cases = [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &a64,
            &long_prefix,
        ];
        for (i, c) in cases.iter().enumerate() {
            assert!(!is_qualified_name(c).is_empty(), "case[{i}] {c:?}");
        }
    }

    #[test]
    fn qualified_name_messages_match_upstream() {
        let regex_msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let cases: Vec<(String, Vec<String>)> = vec![
            ("nospecialchars^=@".into(), vec![regex_msg.into()]),
            (
                "".into(),
                vec!["name part must be non-empty".into(), regex_msg.into()],
            ),
            (
                "/simple".into(),
                vec!["prefix part must be non-empty".into()],
            ),
            (
                "a".repeat(64),
                vec!["name part must be no more than 63 bytes".into()],
            ),
            (
                "example.com/".into(),
                vec!["name part must be non-empty".into(), regex_msg.into()],
            ),
            (
                "Example.com/abc".into(),
                vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()],
            ),
            (
                format!("{}/abc", "a".repeat(254)),
                vec!["prefix part must be no more than 253 bytes".into()],
            ),
            (
                "only/one/slash".into(),
                vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(is_qualified_name(&input), want, "{input:?}");
        }
    }

    #[test]
    fn label_value_follows_upstream_table() {
        // Upstream TestIsValidLabelValue.
        let a63 = "a".repeat(63);
        for ok in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            a63.as_str(),
            "",
        ] {
            assert_eq!(is_valid_label_value(ok), Vec::<String>::new(), "{ok:?}");
        }
        let a64 = "a".repeat(64);
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            a64.as_str(),
        ] {
            assert!(!is_valid_label_value(bad).is_empty(), "{bad:?}");
        }
        assert_eq!(
            is_valid_label_value("-1"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
        );
        assert_eq!(
            is_valid_label_value(&a64),
            vec!["must be no more than 63 bytes".to_string()]
        );
    }

    #[test]
    fn dns1123_subdomain_follows_upstream_table() {
        // Upstream TestIsDNS1123Subdomain.
        let a253 = "a".repeat(253);
        let good = [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "a.a",
            "ab.a",
            "abc.a",
            "a1.a",
            "a-1.a",
            "a--1--2--b.a",
            "a.1",
            "ab.1",
            "abc.1",
            "a1.1",
            "a-1.1",
            "a--1--2--b.1",
            "0.a",
            "01.a",
            "012.a",
            "1a.a",
            "1-a.a",
            "1--a--b--2",
            "0.1",
            "01.1",
            "012.1",
            "1a.1",
            "1-a.1",
            "1--a--b--2.1",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            "11.22.33.44.55",
            &a253,
        ];
        for v in good {
            assert_eq!(is_dns1123_subdomain(v), Vec::<String>::new(), "{v:?}");
        }
        let a254 = "a".repeat(254);
        let bad = [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a..b",
            "1.",
            ".1",
            "1..2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "A.a",
            "aB.a",
            "ab.A",
            "A1.a",
            "a1.A",
            "A.1",
            "aB.1",
            "A1.1",
            "1A.1",
            "0.A",
            "01.A",
            "012.A",
            "1A.a",
            "1a.A",
            "A.B.C.D.E",
            "AA.BB.CC.DD.EE",
            "a.B.c.d.e",
            "aa.bB.cc.dd.ee",
            "a@b",
            "a,b",
            "a_b",
            "a;b",
            "a:b",
            "a%b",
            "a?b",
            "a$b",
            &a254,
        ];
        for v in bad {
            assert!(!is_dns1123_subdomain(v).is_empty(), "{v:?}");
        }
        assert_eq!(
            is_dns1123_subdomain(&a254)[0],
            "must be no more than 253 characters"
        );
    }

    #[test]
    fn decimal_integer_follows_upstream_table() {
        // Upstream TestIsDecimalInteger: every case of its table.
        let valid = [
            "0",
            "1",
            "2",
            "5",
            "9",
            "-5",
            "-1",
            "-9",
            "100",
            "234",
            "345",
            "456",
            "567",
            "678",
            "789",
            "890",
            "999",
            "123",
            "-456",
            "-100",
            "-987",
            "9223372036854775807",
            "-9223372036854775808",
            "12345678901234567890",
            "999999999999",
        ];
        for v in valid {
            assert_eq!(is_decimal_integer(v), Vec::<String>::new(), "{v:?}");
        }
        let invalid = [
            "-0",
            "00",
            "000",
            "0000000",
            "01",
            "02",
            "09",
            "0123",
            "0700",
            "0950",
            "00123",
            "-01",
            "-0123",
            "-00",
            "+123",
            "+5",
            "+0",
            "",
            "-",
            "+",
            " ",
            "   ",
            " 123",
            "123 ",
            "12 3",
            " 123 ",
            "12.3",
            "0.0",
            "-12.5",
            "123.",
            ".123",
            "abc",
            "12a3",
            "a123",
            "123a",
            "ABC",
            "12A3",
            "0x123",
            "0X123",
            "0o777",
            "0b101",
            "1e5",
            "1e-5",
            "1E5",
            "1_000",
            "1,000",
            "1.000",
            "1'000",
            "--123",
            "++123",
            "+-123",
            "-+123",
            "123-",
            "12-3",
            "123+",
            "12+3",
            "\t123",
            "123\t",
            "123\n",
            "123\r",
            "123\0",
            "123\u{b}",
            "123\u{c}",
            "(123)",
            "[123]",
            "{123}",
            "$123",
            "123%",
            "#123",
            "@123",
            "&123",
            "*123",
            "12/3",
            "12\\3",
            "12|3",
            "12;3",
            "12:3",
            "12?3",
            "12!3",
            "~123",
            "`123",
            "'123'",
            "\"123\"",
            "−123",
            "１２３",
            "١٢٣",
            "一二三",
            "123⁴",
            "123₄",
        ];
        for v in invalid {
            assert!(!is_decimal_integer(v).is_empty(), "{v:?}");
        }
        // The empty string gets EmptyError, as upstream's errContains checks.
        assert!(is_decimal_integer("")[0].contains("non-empty"));
        assert_eq!(
            is_decimal_integer("0100"),
            vec!["must be a valid decimal integer in canonical form".to_string()]
        );
    }

    proptest! {
        #[test]
        fn name_checks_never_panic(s in "\\PC*") {
            let _ = is_qualified_name(&s);
            let _ = is_valid_label_value(&s);
            let _ = is_dns1123_subdomain(&s);
            let _ = is_decimal_integer(&s);
        }

        #[test]
        fn canonical_decimal_integers_round_trip(n in any::<i64>()) {
            prop_assert!(is_decimal_integer(&n.to_string()).is_empty());
        }
    }

    /// Upstream's invalid DNS-1123 labels (also invalid DNS-1035 labels).
    const NOT_LABELS: &[&str] = &[
        "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a",
        "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a",
        "a b", "1 ", " 1", "1 2",
    ];

    #[test]
    fn dns1123_label_as_upstream() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
        ] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
        }
        for bad in NOT_LABELS {
            assert!(!is_dns1123_label(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            is_dns1123_label("Default"),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
        assert_eq!(
            is_dns1123_label("a.b"),
            vec!["must not contain dots".to_string()]
        );
    }

    /// Upstream's `TestIsDNS1035Label`.
    #[test]
    fn dns1035_label_as_upstream() {
        for good in ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", &"a".repeat(63)] {
            assert!(is_dns1035_label(good).is_empty(), "{good}");
        }
        // Labels may start with a digit; DNS-1035 labels may not.
        let starting_with_digits = ["0", "01", "012", "1a", "1-a", "1--a--b--2"];
        let too_long = "a".repeat(64);
        let too_long = [too_long.as_str()];
        let not_1035 = NOT_LABELS
            .iter()
            .chain(&starting_with_digits)
            .chain(&too_long);
        for bad in not_1035 {
            assert!(!is_dns1035_label(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            is_dns1035_label("1web"),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
    }

    /// Upstream's `TestIsConfigMapKey`.
    #[test]
    fn config_map_key_as_upstream() {
        for good in [
            "a",
            "good",
            "good-good",
            "still.good",
            "this.is.also.good",
            ".so.is.this",
            "THIS_IS_GOOD",
            "so_is_this_17",
        ] {
            assert!(is_config_map_key(good).is_empty(), "{good}");
        }
        struct Case {
            key: &'static str,
            want: &'static [&'static str],
        }
        const REGEX: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        let cases = [
            Case {
                key: "",
                want: &[REGEX],
            },
            Case {
                key: ".",
                want: &["must not be '.'"],
            },
            Case {
                key: "..",
                want: &["must not be '..'"],
            },
            Case {
                key: "..bad",
                want: &["must not start with '..'"],
            },
            Case {
                key: "b*d",
                want: &[REGEX],
            },
            Case {
                key: "bad!&bad",
                want: &[REGEX],
            },
            Case {
                key: "a b",
                want: &[REGEX],
            },
        ];
        for case in cases {
            assert_eq!(is_config_map_key(case.key), case.want, "{:?}", case.key);
        }
        assert_eq!(
            is_config_map_key(&"a".repeat(254)),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    /// Upstream's `TestIsValidPortNum` and `TestIsValidPortName`.
    #[test]
    fn port_numbers_and_names_as_upstream() {
        for good in [1, 2, 1000, 16384, 32768, 65535] {
            assert!(is_valid_port_num(good).is_empty(), "{good}");
        }
        for bad in [0, -1, 65536, 100000] {
            assert_eq!(
                is_valid_port_num(bad),
                vec!["must be between 1 and 65535, inclusive".to_string()],
                "{bad}"
            );
        }
        for good in [
            "telnet",
            "re-mail-ck",
            "pop3",
            "a",
            "a-1",
            "1-a",
            "a-1-b-2-c",
            "1-a-2-b-3",
        ] {
            assert!(is_valid_port_name(good).is_empty(), "{good}");
        }
        struct Case {
            name: &'static str,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "longerthan15characters",
                want: &["must be no more than 15 characters"],
            },
            Case {
                name: "",
                want: &[
                    "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                    "must contain at least one letter (a-z)",
                ],
            },
            Case {
                name: "12345",
                want: &["must contain at least one letter (a-z)"],
            },
            Case {
                name: "1-2-3-4",
                want: &["must contain at least one letter (a-z)"],
            },
            Case {
                name: "-begin",
                want: &["must not begin or end with a hyphen"],
            },
            Case {
                name: "end-",
                want: &["must not begin or end with a hyphen"],
            },
            Case {
                name: "two--hyphens",
                want: &["must not contain consecutive hyphens"],
            },
            Case {
                name: "whois++",
                want: &["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"],
            },
            Case {
                name: "HTTP",
                want: &[
                    "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                    "must contain at least one letter (a-z)",
                ],
            },
        ];
        for case in cases {
            assert_eq!(is_valid_port_name(case.name), case.want, "{:?}", case.name);
        }
    }
}
