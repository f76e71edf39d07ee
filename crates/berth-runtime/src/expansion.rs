//! `$(VAR)` references in a container's `env` values, `command` and `args`
//! (upstream `third_party/forked/golang/expansion`): `$(NAME)` becomes the
//! variable's value when it is defined and stays as written when it is
//! not; `$$` is a literal `$`; anything else is copied.

use std::collections::HashMap;

/// Expands the references in `input` from `vars`.
pub fn expand(input: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let mut chars = after.chars();
        match chars.next() {
            // A `$` at the very end stays.
            None => {
                out.push('$');
                rest = after;
            }
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => match after.find(')') {
                Some(close) => {
                    let name = &after[1..close];
                    match vars.get(name) {
                        Some(value) => out.push_str(value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &after[close + 1..];
                }
                // An unclosed reference is copied as it is.
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            Some(other) => {
                out.push('$');
                out.push(other);
                rest = &after[other.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `TestMapReference` / `TestMapping` cases.
    #[test]
    fn references_expand_as_upstream() {
        let vars: HashMap<String, String> = [
            ("VAR_A", "A"),
            ("VAR_B", "B"),
            ("VAR_C", "C"),
            ("VAR_REF", "$(VAR_A)"),
            ("VAR_EMPTY", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let cases = [
            ("whole string", "$(VAR_A)", "A"),
            ("repeat", "$(VAR_A)-$(VAR_A)", "A-A"),
            ("beginning", "$(VAR_A)-1", "A-1"),
            ("middle", "___$(VAR_B)___", "___B___"),
            ("end", "___$(VAR_C)", "___C"),
            ("compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
            ("escape & expand", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
            (
                "compound escape",
                "$$(VAR_A)_$$(VAR_B)",
                "$(VAR_A)_$(VAR_B)",
            ),
            ("mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"),
            ("backslash escape ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"),
            (
                "backslash escape ignored 2",
                "foo\\\\$(VAR_C)bar",
                "foo\\\\Cbar",
            ),
            (
                "lots of backslashes",
                "foo\\\\\\\\$(VAR_A)bar",
                "foo\\\\\\\\Abar",
            ),
            (
                "nested var references",
                "$(VAR_A$(VAR_B))",
                "$(VAR_A$(VAR_B))",
            ),
            (
                "nested var references second type",
                "$(VAR_A$(VAR_B)",
                "$(VAR_A$(VAR_B)",
            ),
            ("value is a reference", "$(VAR_REF)", "$(VAR_A)"),
            (
                "value is a reference x 2",
                "%%$(VAR_REF)--$(VAR_REF)%%",
                "%%$(VAR_A)--$(VAR_A)%%",
            ),
            ("empty var", "foo$(VAR_EMPTY)bar", "foobar"),
            (
                "unterminated expression",
                "foo$(VAR_Awhoops!",
                "foo$(VAR_Awhoops!",
            ),
            (
                "expression without operator",
                "f00__(VAR_A)__",
                "f00__(VAR_A)__",
            ),
            ("shell special vars pass through", "$?_boo_$!", "$?_boo_$!"),
            ("bare operators are ignored", "$VAR_A", "$VAR_A"),
            ("undefined vars are ignored", "$(VAR_DNE)", "$(VAR_DNE)"),
            (
                "multiple (even) operators, var undefined",
                "$$$$$$(BIG_MONEY)",
                "$$$(BIG_MONEY)",
            ),
            (
                "multiple (even) operators, var defined",
                "$$$$$$(VAR_A)",
                "$$$(VAR_A)",
            ),
            (
                "multiple (odd) operators, var undefined",
                "$$$$$$$(GOOD_ODDS)",
                "$$$$(GOOD_ODDS)",
            ),
            (
                "multiple (odd) operators, var defined",
                "$$$$$$$(VAR_A)",
                "$$$A",
            ),
            ("missing open expression", "$VAR_A)", "$VAR_A)"),
            ("shell syntax ignored", "${VAR_A}", "${VAR_A}"),
            (
                "trailing incomplete expression not consumed",
                "$(VAR_B)_______$(A",
                "B_______$(A",
            ),
            (
                "trailing incomplete expression, no content, is not consumed",
                "$(VAR_C)_______$(",
                "C_______$(",
            ),
            (
                "operator at end of input string is preserved",
                "$(VAR_A)foobarzab$",
                "Afoobarzab$",
            ),
            (
                "shell escaped incomplete expr",
                "foo-\\$(VAR_A",
                "foo-\\$(VAR_A",
            ),
            ("lots of $( in middle", "--$($($($($--", "--$($($($($--"),
            (
                "lots of $( in beginning",
                "$($($($($--foo$(",
                "$($($($($--foo$(",
            ),
            ("lots of $( at end", "foo0--$($($($(", "foo0--$($($($("),
            (
                "escaped operators in variable names are not escaped",
                "$(foo$$var)",
                "$(foo$$var)",
            ),
            ("newline not expanded", "\n", "\n"),
            ("empty name", "$()", "$()"),
        ];
        for (name, input, want) in cases {
            assert_eq!(expand(input, &vars), want, "{name}");
        }
    }
}
