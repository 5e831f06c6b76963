//! The two ReplicaSets of a BlueGreenDeployment, by color.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The label on each ReplicaSet, its selector and its pods, whose value is
/// the ReplicaSet's color; the Service selects the active one's.
pub const COLOR_LABEL: &str = "color";

/// One of the two ReplicaSets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Color {
    Blue,
    Green,
}

impl Color {
    /// Both, in the order their ReplicaSets are answered.
    pub const BOTH: [Color; 2] = [Color::Blue, Color::Green];

    /// The label value and the suffix of the ReplicaSet's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Color::Blue => "blue",
            Color::Green => "green",
        }
    }

    /// The other ReplicaSet.
    pub fn other(self) -> Color {
        match self {
            Color::Blue => Color::Green,
            Color::Green => Color::Blue,
        }
    }

    /// The color a label value names, if any.
    pub fn parse(value: &str) -> Option<Color> {
        Color::BOTH.into_iter().find(|c| c.as_str() == value)
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
