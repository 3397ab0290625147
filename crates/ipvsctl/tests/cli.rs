//! End-to-end checks of the binary that need no kernel.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ipvsctl"))
}

#[test]
fn version_help_completions_man() {
    let o = bin().arg("--version").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ipvsctl "));
    let o = bin().args(["completions", "bash"]).output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("_ipvsctl()"));
    let o = bin().arg("man").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH ipvsctl 1"));
    let dir = std::env::temp_dir().join(format!("ipvsctl-man-{}", std::process::id()));
    let o = bin().args(["man", "--out-dir"]).arg(&dir).output().unwrap();
    assert!(o.status.success());
    assert!(dir.join("ipvsctl.1").exists());
    assert!(dir.join("ipvsctl-apply.1").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ipvsadm_help_and_version_without_kernel() {
    // argv[0] "ipvsadm" selects the compatible interface.
    let dir = std::env::temp_dir().join(format!("ipvsctl-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("ipvsadm");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ipvsctl"), &link).unwrap();
    let o = Command::new(&link).arg("-v").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n"
    );
    let o = Command::new(&link).arg("-h").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("/ipvsadm -A|E virtual-service"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_fail_before_touching_the_kernel() {
    let dir = std::env::temp_dir().join(format!("ipvsctl-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.yaml");
    std::fs::write(
        &f,
        "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: 80\n    scheduler: \"\"\n",
    )
    .unwrap();
    let o = bin().args(["apply", "-f"]).arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.yaml:5:5: services[0].scheduler: scheduler name must be 1..15 bytes"),
        "{err}"
    );
    std::fs::write(
        &f,
        "services:\n  - protocol: tcp\n    address: 10.0.0.1\n    port: [80]\n",
    )
    .unwrap();
    let o = bin().args(["plan", "-f"]).arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.yaml:4:11: services[0].port: invalid type"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2() {
    let o = bin().args(["service", "add", "tcp"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = bin()
        .args(["conn", "--file", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}
