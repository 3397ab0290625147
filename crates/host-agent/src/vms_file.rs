//! `--vms-file`: the VMs a host runs, kept by whoever starts and moves them
//! (a hypervisor hook, the orchestrator), re-read when it changes, so a VM
//! that moves here is reported from the next sample on.
//!
//! One VM per line, as `--vm` takes it: `ADDR[,ADDR...][=CGROUP]`; blank
//! lines and `#` comments are skipped.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::VmSource;

/// Parses one VM: `ADDR[,ADDR...][=CGROUP]`.
pub fn parse_vm(s: &str) -> Result<VmSource, String> {
    let (addrs, cgroup) = match s.split_once('=') {
        Some((a, c)) if !c.trim().is_empty() => (a, Some(PathBuf::from(c.trim()))),
        Some(_) => return Err("empty cgroup after '='".into()),
        None => (s, None),
    };
    let addrs = addrs
        .split(',')
        .map(|a| {
            a.trim().parse::<IpAddr>().map_err(|_| {
                format!("{a:?} is not an IP address (expected ADDR[,ADDR...][=CGROUP])")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VmSource { addrs, cgroup })
}

/// Parses a whole file; an error names the line.
pub fn parse_vms(text: &str) -> Result<Vec<VmSource>, String> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| parse_vm(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// A VMs file and the modification time last read.
pub struct VmsFile {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
}

impl VmsFile {
    /// Follows `path` (nothing read yet).
    pub fn new(path: &Path) -> Self {
        VmsFile {
            path: path.to_path_buf(),
            seen: None,
        }
    }

    /// The VM list if the file changed since the last call (`Ok(None)`:
    /// unchanged). A file that cannot be read or parsed is an error naming
    /// it; the caller keeps the list it has.
    pub fn changed(&mut self) -> Result<Option<Vec<VmSource>>, String> {
        let name = self.path.display();
        let meta = std::fs::metadata(&self.path).map_err(|e| format!("{name}: {e}"))?;
        let mtime = (
            meta.modified().map_err(|e| format!("{name}: {e}"))?,
            meta.len(),
        );
        if self.seen == Some(mtime) {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&self.path).map_err(|e| format!("{name}: {e}"))?;
        let vms = parse_vms(&text).map_err(|e| format!("{name}: {e}"))?;
        self.seen = Some(mtime);
        Ok(Some(vms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_errors() {
        let vms =
            parse_vms("# VMs\n10.1.1.1\n\n10.1.1.2, 2001:db8::2 = /sys/fs/cgroup/vm2 # web\n")
                .unwrap();
        assert_eq!(vms.len(), 2);
        assert_eq!(vms[1].addrs.len(), 2);
        assert_eq!(
            vms[1].cgroup.as_deref(),
            Some(Path::new("/sys/fs/cgroup/vm2"))
        );
        let e = parse_vms("10.1.1.1\nnot-an-address\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(parse_vm("10.1.1.1=").is_err());
    }

    #[test]
    fn reread_only_when_changed() {
        let p = std::env::temp_dir().join(format!("host-agent-vms-{}", std::process::id()));
        std::fs::write(&p, "10.1.1.1\n").unwrap();
        let mut f = VmsFile::new(&p);
        assert_eq!(f.changed().unwrap().unwrap().len(), 1);
        assert_eq!(f.changed().unwrap(), None, "unchanged: not re-read");
        // A later mtime each time: a rewrite within the clock's tick is seen too.
        let rewrite = |text: &str, later: u64| {
            std::fs::write(&p, text).unwrap();
            let t = SystemTime::now() + std::time::Duration::from_secs(later);
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(t).unwrap();
        };
        rewrite("10.1.1.1\n10.1.1.2\nbad\n", 5);
        assert!(f.changed().unwrap_err().contains("line 3"));
        rewrite("10.1.1.2\n", 10);
        assert_eq!(
            f.changed().unwrap().unwrap()[0].addrs[0].to_string(),
            "10.1.1.2"
        );
        std::fs::remove_file(&p).unwrap();
        assert!(f.changed().is_err(), "a missing file is an error");
    }
}
