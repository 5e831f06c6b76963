//! Request decoding with errors a person can act on: the line and column of
//! malformed JSON, the field path of well-formed JSON of the wrong shape.

use serde::de::DeserializeOwned;
use serde_json::error::Category;

/// Why a request could not be decoded: where, and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body is not JSON (or is cut short).
    #[error("malformed JSON at line {line} column {column}: {message}")]
    Syntax {
        /// The line where it breaks, from 1.
        line: usize,
        /// The column where it breaks, from 1.
        column: usize,
        /// What was found there: `key must be a string`, `EOF while
        /// parsing an object`.
        message: String,
    },
    /// The body is JSON, but not a request this hook understands.
    #[error("unexpected request shape at `{path}`: {message}")]
    Shape {
        /// The field, as a path from the body's top: `parent.spec.replicas`
        /// (`.` for the body itself).
        path: String,
        /// What was wrong with it: `invalid type: string "three", expected
        /// u32`.
        message: String,
    },
}

/// Decodes a request body. The common, valid case takes the fast path; the
/// field path is worked out only when decoding has already failed.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    let err = match serde_json::from_slice(body) {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    match err.classify() {
        Category::Data => {
            let mut de = serde_json::Deserializer::from_slice(body);
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Err(with_path) => Err(DecodeError::Shape {
                    path: with_path.path().to_string(),
                    message: strip_position(&with_path.into_inner()),
                }),
                // Unreachable in practice: the same bytes failed above.
                Ok(_) => Err(DecodeError::Shape {
                    path: ".".to_owned(),
                    message: strip_position(&err),
                }),
            }
        }
        Category::Io | Category::Syntax | Category::Eof => Err(DecodeError::Syntax {
            line: err.line(),
            column: err.column(),
            message: strip_position(&err),
        }),
    }
}

impl DecodeError {
    /// The error with its path put under `at`: for a part of a body
    /// decoded on its own (`request.object`, `objects[2].spec`).
    pub(crate) fn under(self, at: &str) -> DecodeError {
        match self {
            DecodeError::Shape { path, message } => DecodeError::Shape {
                path: if path == "." {
                    at.to_owned()
                } else {
                    format!("{at}.{path}")
                },
                message,
            },
            syntax => syntax,
        }
    }
}

/// serde_json appends " at line L column C" to its messages; the error
/// variants carry the position separately, so drop it from the text.
pub(crate) fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    #[test]
    fn malformed_json_reports_line_and_column() {
        let err = decode::<Outer>(b"{\n  \"inner\": {,\n}").unwrap_err();
        assert_eq!(
            err,
            DecodeError::Syntax {
                line: 2,
                column: 13,
                message: "key must be a string".into()
            }
        );
    }

    #[test]
    fn wrong_shape_reports_the_field_path() {
        let err = decode::<Outer>(br#"{"inner": {"count": "three"}}"#).unwrap_err();
        match err {
            DecodeError::Shape { path, message } => {
                assert_eq!(path, "inner.count");
                assert!(message.contains("expected u32"), "{message}");
            }
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn empty_body_is_malformed() {
        assert!(matches!(
            decode::<Outer>(b""),
            Err(DecodeError::Syntax { .. })
        ));
    }
}
