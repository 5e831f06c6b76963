//! What can go wrong reading the manifests.
//!
//! Each error names the file, and, for a manifest outside the subset, the
//! field by its path.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path} failed")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{source_name}: not valid YAML")]
    Yaml {
        source_name: String,
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    #[error("{source_name}: `{field}` is not supported by the bundled driver{hint}")]
    Unsupported {
        source_name: String,
        field: String,
        hint: String,
    },
    #[error("{source_name}: `{field}` {message}")]
    Invalid {
        source_name: String,
        field: String,
        message: String,
    },
    #[error("{source_name}: a controller named {name} is already defined in {first}")]
    Duplicate {
        source_name: String,
        name: String,
        first: String,
    },
    #[error("{dir} holds no *.yaml or *.yml controller manifests")]
    Empty { dir: PathBuf },
}
