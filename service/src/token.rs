//! The bearer token callers must send (`--auth-token-file`): a mounted
//! Secret's key, re-read when it changes, compared in constant time.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use subtle::ConstantTimeEq;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("reading the token file {path} failed")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the token file {path} is empty")]
    Empty { path: PathBuf },
}

/// The token in a file.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    current: RwLock<Vec<u8>>,
}

/// The file's token without surrounding whitespace (a Secret written with
/// `echo` ends in a newline; Metacontroller trims the value it sends too).
fn read(path: &Path) -> Result<Vec<u8>, TokenError> {
    let bytes = std::fs::read(path).map_err(|source| TokenError::Read {
        path: path.to_owned(),
        source,
    })?;
    let token = bytes.trim_ascii();
    if token.is_empty() {
        return Err(TokenError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(token.to_vec())
}

impl TokenFile {
    /// Reads `path`: a missing or empty file fails at start.
    pub fn load(path: &Path) -> Result<Self, TokenError> {
        Ok(TokenFile {
            current: RwLock::new(read(path)?),
            path: path.to_owned(),
        })
    }

    /// Re-reads the file: `Ok(true)` when the token changed. A missing or
    /// empty file keeps the token in use.
    pub fn reload(&self) -> Result<bool, TokenError> {
        let token = read(&self.path)?;
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if *current == token {
            return Ok(false);
        }
        *current = token;
        Ok(true)
    }

    /// Whether `Authorization: <header>` carries the token: scheme `Bearer`
    /// (any case, RFC 9110 §11.1), then the token, compared in constant
    /// time.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some(header) = header else {
            return false;
        };
        let Some((scheme, credentials)) = header.split_at_checked(6) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return false;
        }
        let Some(credentials) = credentials.strip_prefix(b" ") else {
            return false;
        };
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        credentials.trim_ascii().ct_eq(current.as_slice()).into()
    }

    /// Re-reads the file and logs what changed or failed.
    pub fn reload_logged(&self) {
        match self.reload() {
            Ok(true) => {
                tracing::info!(path = %self.path.display(), "the hook service's token changed")
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(
                error = %metahook_core::error_chain(&err),
                "re-reading the hook service's token failed; the one in use stays"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_bearer_and_exact_and_follows_the_file() {
        let path = std::env::temp_dir().join(format!("metahook-token-{}", std::process::id()));
        std::fs::write(&path, "s3cret\n").unwrap();
        let token = TokenFile::load(&path).unwrap();
        assert!(token.admits(Some(b"Bearer s3cret")));
        assert!(token.admits(Some(b"bearer s3cret")));
        for refused in [
            &b"Bearer s3cre"[..],
            b"Bearer s3cret2",
            b"Basic s3cret",
            b"Bearers3cret",
            b"s3cret",
            b"Bearer ",
            b"",
        ] {
            assert!(
                !token.admits(Some(refused)),
                "{}",
                String::from_utf8_lossy(refused)
            );
        }
        assert!(!token.admits(None));
        assert!(!token.reload().unwrap());
        std::fs::write(&path, "rotated").unwrap();
        assert!(token.reload().unwrap());
        assert!(token.admits(Some(b"Bearer rotated")));
        assert!(!token.admits(Some(b"Bearer s3cret")));
        std::fs::write(&path, "  \n").unwrap();
        assert!(matches!(token.reload(), Err(TokenError::Empty { .. })));
        assert!(
            token.admits(Some(b"Bearer rotated")),
            "the token in use stays"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            TokenFile::load(&path),
            Err(TokenError::Read { .. })
        ));
    }
}
