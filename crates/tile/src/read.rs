//! The crate's one piece of I/O: a tile file read from its path (a
//! regular file of at most [`MAX_TILE_BYTES`], UTF-8), and each member's
//! definition file, a path relative to the tile file's directory (as
//! Cargo reads a path dependency), through `tickpack_game::source`.

use std::io::Read;
use std::path::{Path, PathBuf};

use tickpack_game::registry::is_path;

use crate::{Tile, TileError};

/// The largest tile file read, in bytes.
pub const MAX_TILE_BYTES: u64 = 64 * 1024;

/// Where a member's `game` is: a built-in name as is, an absolute path
/// as is, a relative path under `dir` (the tile file's directory).
pub fn game_path(dir: &Path, game: &str) -> String {
    if is_path(game) && !Path::new(game).is_absolute() {
        dir.join(game).display().to_string()
    } else {
        game.to_string()
    }
}

/// Reads, checks and resolves the tile file at `path`.
pub fn load(path: &Path) -> Result<Tile, TileError> {
    let file = path.display().to_string();
    let refuse = |message: String| TileError {
        file: file.clone(),
        line: 0,
        message,
    };
    let f = std::fs::File::open(path).map_err(|e| refuse(e.to_string()))?;
    let meta = f.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() > MAX_TILE_BYTES {
        return Err(refuse(format!(
            "larger than {MAX_TILE_BYTES} bytes: not a tile file"
        )));
    }
    let mut bytes = vec![];
    f.take(MAX_TILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?;
    let dir: PathBuf = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    Tile::parse(&file, &text, |game| {
        tickpack_game::source::load(&game_path(&dir, game))
    })
}
