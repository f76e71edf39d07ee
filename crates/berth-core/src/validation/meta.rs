//! Object metadata rules shared by every type: apimachinery's
//! `ValidateLabels` (label keys are qualified names, values label values).

use super::names::{is_qualified_name, is_valid_label_value};
use super::{ErrorList, FieldError, Path};

/// `ValidateLabels`: every key a qualified name, every value a label value;
/// errors at `path` itself (upstream does not key them).
pub fn validate_labels<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (key, value) in labels {
        for problem in is_qualified_name(key) {
            errs.push(FieldError::invalid(path, key, problem));
        }
        for problem in is_valid_label_value(value) {
            errs.push(FieldError::invalid(path, value, problem));
        }
    }
    errs
}
