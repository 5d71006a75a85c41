//! The transport a definition's port speaks (`transport = "udp"`), in a
//! file of its own so the modules that read it (`check`, `def`) need not
//! use each other.

use serde::{Deserialize, Serialize};

/// The transport the game's port speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Udp,
    Tcp,
}
