//! The Debian package (`cargo deb`, configured in Cargo.toml): what it holds, its units as
//! systemd reads them, the installed binary serving with the installed configuration, and,
//! as root, deploy/debian/test-install.sh: dpkg -i, -r and -P on an overlay of the machine.
//!
//! The package is built from the binary this test run built (`cargo deb --no-build --profile
//! dev`), so the test costs no release build.

mod common;

use common::{free_port, tool, wait_until_serving, DataDir, RawClient, Running};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn assert_ran(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The package, built once for the tests here (cargo deb stages its files in one place), or
/// None (a notice, or a failure under CI) without cargo-deb.
fn package() -> Option<&'static Path> {
    static PACKAGE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let built = PACKAGE.get_or_init(|| {
        tool("cargo-deb")?;
        let deb = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sieved.deb");
        let output = Command::new(env!("CARGO"))
            .args(["deb", "--no-build", "--profile", "dev", "--output"])
            .arg(&deb)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run cargo deb");
        assert_ran("cargo deb", &output);
        Some(deb)
    });
    built.as_deref()
}

/// `dpkg-deb` with `args`, its output as text.
fn dpkg_deb(args: &[&str], deb: &Path) -> String {
    let output = Command::new("dpkg-deb")
        .args(args)
        .arg(deb)
        .output()
        .expect("run dpkg-deb");
    assert_ran("dpkg-deb", &output);
    String::from_utf8(output.stdout).unwrap()
}

/// The lines of a unit file other than its comments.
fn unit_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|line| !line.starts_with('#')).collect()
}

#[test]
fn packaged_units_are_the_deployed_unit_with_the_package_paths() {
    let deployed = std::fs::read_to_string(repo_file("deploy/sieved.service")).unwrap();
    let packaged = std::fs::read_to_string(repo_file("deploy/debian/sieved.service")).unwrap();
    let template = std::fs::read_to_string(repo_file("deploy/debian/sieved@.service")).unwrap();
    let as_packaged = deployed.replace(
        "ExecStart=/usr/local/bin/sieved --config /etc/sieved/sieved.conf",
        "ExecStart=/usr/bin/sieved /etc/sieved/sieved.conf",
    );
    assert_eq!(unit_lines(&packaged), unit_lines(&as_packaged));
    let as_template = as_packaged
        .replace("Description=sieved:", "Description=sieved %i:")
        .replace(
            "ExecStart=/usr/bin/sieved /etc/sieved/sieved.conf",
            "ExecStart=/usr/bin/sieved /etc/sieved/%i.conf --dir /var/lib/sieved/%i",
        )
        .replace("StateDirectory=sieved\n", "StateDirectory=sieved/%i\n");
    assert_eq!(unit_lines(&template), unit_lines(&as_template));
}

#[test]
fn package_holds_the_server_its_configuration_units_and_man_page() {
    let Some(deb) = package() else {
        return;
    };
    let dir = DataDir::new("package-contents");
    let contents = dpkg_deb(&["--contents"], deb);
    for (mode, path) in [
        ("-rwxr-xr-x", "./usr/bin/sieved"),
        ("-rw-r-----", "./etc/sieved/sieved.conf"),
        ("-rw-r--r--", "./usr/lib/systemd/system/sieved.service"),
        ("-rw-r--r--", "./usr/lib/systemd/system/sieved@.service"),
        ("-rw-r--r--", "./usr/share/man/man1/sieved.1.gz"),
        ("-rw-r--r--", "./usr/share/man/man5/sieved.conf.5.gz"),
        ("-rw-r--r--", "./usr/share/doc/sieved/copyright"),
    ] {
        assert!(
            contents
                .lines()
                .any(|line| line.starts_with(mode) && line.ends_with(&format!(" {path}"))),
            "no {mode} {path} in\n{contents}"
        );
    }
    let conffiles = dpkg_deb(&["--info"], deb);
    assert!(conffiles.contains("conffiles"), "{conffiles}");
    let fields = dpkg_deb(&["--field"], deb);
    assert!(fields.contains("Package: sieved\n"), "{fields}");
    assert!(fields.contains("adduser"), "{fields}");
    assert!(fields.contains(&format!("Version: {}", env!("CARGO_PKG_VERSION"))));

    // The files as installed, read from the package rather than from the tree.
    let root = dir.0.join("root");
    let output = Command::new("dpkg-deb")
        .arg("--extract")
        .arg(deb)
        .arg(&root)
        .output()
        .expect("run dpkg-deb");
    assert_ran("dpkg-deb --extract", &output);
    let control = dir.0.join("control");
    let output = Command::new("dpkg-deb")
        .arg("--control")
        .arg(deb)
        .arg(&control)
        .output()
        .expect("run dpkg-deb");
    assert_ran("dpkg-deb --control", &output);
    assert_eq!(
        std::fs::read_to_string(control.join("conffiles")).unwrap(),
        "/etc/sieved/sieved.conf\n"
    );
    for script in ["postinst", "prerm", "postrm"] {
        let output = Command::new("sh")
            .arg("-n")
            .arg(control.join(script))
            .output()
            .unwrap();
        assert_ran(script, &output);
    }

    if let Some(analyze) = tool("systemd-analyze") {
        verify_units(&analyze, &root);
    }
    if let Some(man) = tool("man") {
        for (page, shows) in [
            ("usr/share/man/man1/sieved.1.gz", "--maxmemory"),
            ("usr/share/man/man5/sieved.conf.5.gz", "DIRECTIVES"),
        ] {
            let output = Command::new(&man)
                .arg("-l")
                .arg(root.join(page))
                .env("MANWIDTH", "80")
                .output()
                .unwrap();
            assert_ran(&format!("man -l {page}"), &output);
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(text.contains("SYNOPSIS") && text.contains(shows), "{text}");
        }
    }

    // The installed binary with the installed configuration given as its first argument, on
    // a test port and directory (the configured ones belong to the machine).
    let port = free_port();
    let data = DataDir::new("package-serving");
    let child = Command::new(root.join("usr/bin/sieved"))
        .arg(root.join("etc/sieved/sieved.conf"))
        .args(["--port", &port.to_string(), "--dir"])
        .arg(&data.0)
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .spawn()
        .expect("start the installed sieved");
    let server = wait_until_serving(Running(child), port);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    assert_eq!(
        client.cmd(&["BF.ADD", "seen", "https://example.com/"]),
        b":1\r\n"
    );
    let config_file = client.info_field("server", "config_file");
    assert_eq!(Path::new(&config_file), root.join("etc/sieved/sieved.conf"));
    server.kill();
}

/// `systemd-analyze verify` of the packaged units, their ExecStart pointed at the extracted
/// binary (verify checks that it exists) and the template instantiated.
fn verify_units(analyze: &Path, root: &Path) {
    let units = root.join("usr/lib/systemd/system");
    let binary = root.join("usr/bin/sieved");
    let check = units.join("check");
    std::fs::create_dir_all(&check).unwrap();
    for (unit, name) in [
        ("sieved.service", "sieved.service"),
        ("sieved@.service", "sieved@check.service"),
    ] {
        let text = std::fs::read_to_string(units.join(unit)).unwrap();
        assert!(text.contains("ExecStart=/usr/bin/sieved /etc/sieved/"));
        let path = check.join(name);
        std::fs::write(
            &path,
            text.replace("/usr/bin/sieved", binary.to_str().unwrap()),
        )
        .unwrap();
        let output = Command::new(analyze)
            .arg("verify")
            .arg(&path)
            .current_dir(&check)
            .output()
            .expect("run systemd-analyze");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        assert!(
            !stderr.contains("sieved"),
            "systemd-analyze complains about {name}:\n{stderr}"
        );
    }
}

/// Whether this process may build a throw-away root: it is root, and unshare and overlayfs
/// work here.
fn can_sandbox() -> bool {
    let id = Command::new("id").arg("-u").output();
    let root = id.is_ok_and(|id| id.stdout == b"0\n");
    root && Command::new("unshare")
        .args(["--mount", "--net", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[test]
fn package_installs_serves_and_keeps_data_through_removal() {
    if !can_sandbox() {
        common::missing("root with unshare (to run deploy/debian/test-install.sh)");
        return;
    }
    let Some(deb) = package() else {
        return;
    };
    let output = Command::new(repo_file("deploy/debian/test-install.sh"))
        .arg(deb)
        .output()
        .expect("run test-install.sh");
    assert_ran("deploy/debian/test-install.sh", &output);
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("PASS\n"));
}
