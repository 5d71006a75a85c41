//! The mount namespace of an isolated instance: prepared in the parent
//! before the fork ([`MountPlan::new`]), applied in the child before
//! `exec` with raw syscalls only ([`MountPlan::apply`]).

use std::ffi::CString;
use std::path::Path;

use super::{cpath, cstr, SpawnError, Spec};

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// Size of the private `/tmp` and `/dev/shm` of each instance.
pub const TMPFS_OPTIONS: &str = "mode=1777,size=64m";

/// The mount namespace of an isolated instance, prepared before the fork
/// and applied in the child with raw syscalls only.
pub(super) struct MountPlan {
    hostname: CString,
    root: CString,
    dev: CString,
    dev_is_mount: bool,
    tmp: CString,
    shm: Option<CString>,
    tmpfs: CString,
    tmp_opts: CString,
    empty: CString,
    workdir: CString,
    /// The working directory held open, cloned through its descriptor.
    workdir_fd: Option<libc::c_int>,
    /// Directories to create, outermost first, up to the hidden run dir
    /// (needed when the private /tmp hides it), then the run dir itself.
    hide: Option<(Vec<CString>, CString, CString)>,
    /// Directories between the hidden run dir and the working directory.
    inner: Vec<CString>,
}

/// Writes a fixed message to the log (fd 2) and returns the errno of the
/// failed call: the pre-exec child cannot allocate to say more.
fn step(rc: libc::c_int, what: &'static [u8]) -> std::io::Result<()> {
    if rc >= 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    let pre = b"tickpack: setting up the instance failed at: ";
    // SAFETY: write(2) of static buffers to fd 2.
    unsafe {
        libc::write(2, pre.as_ptr().cast(), pre.len());
        libc::write(2, what.as_ptr().cast(), what.len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
    }
    Err(err)
}

/// mount_setattr(2) (Linux 5.12+).
///
/// # Safety
/// `path` must be a valid C string.
unsafe fn mount_setattr(
    dirfd: libc::c_int,
    path: *const libc::c_char,
    flags: libc::c_int,
    set: u64,
    clr: u64,
) -> libc::c_int {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clr,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the caller passes a valid path; attr lives across the call
    // and its size is passed along.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path,
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) as libc::c_int
    }
}

impl MountPlan {
    pub(super) fn new(spec: &Spec) -> Result<MountPlan, SpawnError> {
        use std::os::unix::fs::MetadataExt;
        let iso = &spec.isolation;
        let dev_is_mount = match (std::fs::metadata("/"), std::fs::metadata("/dev")) {
            (Ok(r), Ok(d)) => r.dev() != d.dev(),
            _ => false,
        };
        let shm = Path::new("/dev/shm").is_dir();
        let hide = iso
            .hide
            .as_ref()
            .filter(|h| spec.workdir.starts_with(h) && spec.workdir != **h);
        let (hide, inner) = match hide {
            Some(h) => {
                let mut outer: Vec<&Path> = h.ancestors().skip(1).collect();
                outer.reverse();
                let outer = outer
                    .into_iter()
                    .filter(|p| p.parent().is_some())
                    .map(|p| cpath(p, "run dir"))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut inner: Vec<&Path> =
                    spec.workdir.ancestors().take_while(|p| p != h).collect();
                inner.reverse();
                let inner = inner
                    .into_iter()
                    .map(|p| cpath(p, "working directory"))
                    .collect::<Result<Vec<_>, _>>()?;
                let opts = cstr("mode=0755,size=1m", "mount options")?;
                (Some((outer, cpath(h, "run dir")?, opts)), inner)
            }
            None => (None, vec![]),
        };
        Ok(MountPlan {
            hostname: cstr(iso.hostname.as_deref().unwrap_or_default(), "hostname")?,
            root: cstr("/", "path")?,
            dev: cstr("/dev", "path")?,
            dev_is_mount,
            tmp: cstr("/tmp", "path")?,
            shm: if shm {
                Some(cstr("/dev/shm", "path")?)
            } else {
                None
            },
            tmpfs: cstr("tmpfs", "fs type")?,
            tmp_opts: cstr(TMPFS_OPTIONS, "mount options")?,
            empty: cstr("", "path")?,
            workdir: cpath(&spec.workdir, "working directory")?,
            workdir_fd: iso
                .workdir_fd
                .as_deref()
                .map(std::os::fd::AsRawFd::as_raw_fd),
            hide,
            inner,
        })
    }

    /// Runs in the pre-exec child: raw syscalls on prepared data only.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        let null = std::ptr::null();
        let nosuid_nodev = libc::MS_NOSUID | libc::MS_NODEV;
        // SAFETY: every pointer is a prepared, live C string or null where
        // the call allows it; the working directory's descriptor lives in
        // the spec until the spawn returns.
        unsafe {
            // A detached copy of the working directory, attached again
            // below once the run dir (and maybe /tmp) hides its path: taken
            // through its descriptor while the mount is still in this
            // namespace (open_tree clones only a mount of the caller's).
            let held = self.workdir_fd.map(|fd| {
                libc::syscall(
                    libc::SYS_open_tree,
                    fd,
                    self.empty.as_ptr(),
                    OPEN_TREE_CLONE | (libc::O_CLOEXEC | libc::AT_EMPTY_PATH) as libc::c_uint,
                ) as libc::c_int
            });
            if let Some(tree) = held {
                step(tree, b"open_tree of the working directory")?;
            }
            step(
                libc::unshare(
                    libc::CLONE_NEWNS
                        | libc::CLONE_NEWUTS
                        | libc::CLONE_NEWPID
                        | libc::CLONE_NEWIPC,
                ),
                b"unshare",
            )?;
            step(
                libc::sethostname(self.hostname.as_ptr(), self.hostname.as_bytes().len()),
                b"sethostname",
            )?;
            step(
                libc::mount(
                    null,
                    self.root.as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    null.cast(),
                ),
                b"making mounts private",
            )?;
            // Without a descriptor: by its path, in this namespace.
            let tree = match held {
                Some(tree) => tree,
                None => libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    self.workdir.as_ptr(),
                    OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
                ) as libc::c_int,
            };
            step(tree, b"open_tree of the working directory")?;
            // Every mount read-only, nosuid, nodev...
            step(
                mount_setattr(
                    libc::AT_FDCWD,
                    self.root.as_ptr(),
                    libc::AT_RECURSIVE,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    0,
                ),
                b"mount_setattr / read-only,nosuid,nodev (needs Linux 5.12+)",
            )?;
            // ...but device nodes (/dev/null, /dev/urandom) still work.
            if self.dev_is_mount {
                step(
                    mount_setattr(
                        libc::AT_FDCWD,
                        self.dev.as_ptr(),
                        libc::AT_RECURSIVE,
                        0,
                        MOUNT_ATTR_NODEV,
                    ),
                    b"mount_setattr /dev",
                )?;
            }
            step(
                libc::mount(
                    self.tmpfs.as_ptr(),
                    self.tmp.as_ptr(),
                    self.tmpfs.as_ptr(),
                    nosuid_nodev,
                    self.tmp_opts.as_ptr().cast(),
                ),
                b"private /tmp",
            )?;
            if let Some(shm) = &self.shm {
                step(
                    libc::mount(
                        self.tmpfs.as_ptr(),
                        shm.as_ptr(),
                        self.tmpfs.as_ptr(),
                        nosuid_nodev,
                        self.tmp_opts.as_ptr().cast(),
                    ),
                    b"private /dev/shm",
                )?;
            }
            if let Some((outer, run_dir, opts)) = &self.hide {
                // Under /tmp the run dir is gone from view: make its path
                // again in the private /tmp (elsewhere they exist: EEXIST).
                for d in outer.iter().chain(std::iter::once(run_dir)) {
                    libc::mkdir(d.as_ptr(), 0o755);
                }
                step(
                    libc::mount(
                        self.tmpfs.as_ptr(),
                        run_dir.as_ptr(),
                        self.tmpfs.as_ptr(),
                        nosuid_nodev | libc::MS_NOEXEC,
                        opts.as_ptr().cast(),
                    ),
                    b"hiding the run dir",
                )?;
                for d in &self.inner {
                    step(
                        libc::mkdir(d.as_ptr(), 0o755),
                        b"mkdir in the hidden run dir",
                    )?;
                }
            }
            step(
                mount_setattr(
                    tree,
                    self.empty.as_ptr(),
                    libc::AT_EMPTY_PATH,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    MOUNT_ATTR_RDONLY,
                ),
                b"making the working directory writable, nosuid, nodev",
            )?;
            step(
                libc::syscall(
                    libc::SYS_move_mount,
                    tree,
                    self.empty.as_ptr(),
                    libc::AT_FDCWD,
                    self.workdir.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ) as libc::c_int,
                b"mounting the working directory",
            )?;
            libc::close(tree);
            // The cwd still points below the old mount; enter the new one.
            step(
                libc::chdir(self.workdir.as_ptr()),
                b"chdir to the working directory",
            )?;
        }
        Ok(())
    }
}
