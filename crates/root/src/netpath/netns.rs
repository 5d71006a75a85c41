//! Named network namespaces the way iproute2 keeps them, so `ip netns`
//! sees ours and we see its: one file per namespace under /run/netns, a
//! bind mount of the namespace (`/proc/thread-self/ns/net` of a thread
//! that made it) onto the file. /run/netns itself is a shared mount, so a
//! namespace unmounted here is unmounted in every mount namespace.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{
    mount_bind, mount_bind_recursive, mount_change, unmount, MountPropagationFlags, UnmountFlags,
};
use rustix::thread::{unshare_unsafe, UnshareFlags};

use super::NETNS_DIR;

/// Makes /run/netns (if missing) a shared mount, as `ip netns add` does:
/// bind-mounted onto itself the first time, when it is not a mount point yet.
fn share_dir() -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(NETNS_DIR)?;
    let shared = MountPropagationFlags::SHARED | MountPropagationFlags::REC;
    match mount_change(NETNS_DIR, shared) {
        Err(rustix::io::Errno::INVAL) => {
            mount_bind_recursive(NETNS_DIR, NETNS_DIR)?;
            mount_change(NETNS_DIR, shared)?;
        }
        r => r?,
    }
    Ok(())
}

/// Creates the network namespace `name` (file /run/netns/NAME); an
/// existing one is `EEXIST`.
pub(crate) fn add(name: &str) -> io::Result<()> {
    share_dir()?;
    let path = Path::new(NETNS_DIR).join(name);
    // As `ip netns add`: an empty file, mode 0, that must not exist yet.
    rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // A thread of its own enters a new namespace and pins it with the bind
    // mount; the namespace lives on in the mount when the thread ends.
    let made = std::thread::scope(|s| {
        s.spawn(|| -> io::Result<()> {
            // SAFETY: only CLONE_NEWNET is unshared (not CLONE_FILES, the
            // flag `unshare_unsafe` is unsafe for): this thread's file
            // descriptors stay shared with the process.
            unsafe { unshare_unsafe(UnshareFlags::NEWNET) }?;
            mount_bind("/proc/thread-self/ns/net", &path)?;
            Ok(())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
    });
    if made.is_err() {
        let _ = fs::remove_file(&path);
    }
    made
}

/// Removes the network namespace `name`: unmounts (lazily) and unlinks its
/// file. One already gone is `ENOENT`.
pub(crate) fn delete(name: &str) -> io::Result<()> {
    let path = Path::new(NETNS_DIR).join(name);
    // Like `ip netns del`: an unmount failure (not mounted) is not fatal;
    // the unlink says whether the namespace was there.
    let _ = unmount(&path, UnmountFlags::DETACH);
    fs::remove_file(&path)
}

/// The names under /run/netns (none when it does not exist).
pub(crate) fn names() -> io::Result<Vec<String>> {
    let dir = match fs::read_dir(NETNS_DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut names = vec![];
    for entry in dir {
        let entry = entry?;
        if let Some(n) = entry.file_name().to_str() {
            names.push(n.to_string());
        }
    }
    names.sort();
    Ok(names)
}
